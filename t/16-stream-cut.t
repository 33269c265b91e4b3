#!/usr/bin/perl
# A stream cut by a dying worker reaches the client as an error (issue 23, item 3): kill -9
# of the worker serving a streamed /api/chat leaves curl with a non-zero exit (no last
# chunk) and makes the official `openai` client throw, through the shipped nginx files
# (svc-stream.conf: fastcgi_keep_conn, buffered mode). A complete stream still arrives event by
# event and ends cleanly. The npm packages come from t/node (installed as t/60-clients.t does).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time);
use SvcTest;

my $dir = SvcTest->repo . '/t/node';
plan skip_all => 'node is not installed (scripts/install-deps: nodejs)'
    unless `command -v node 2>/dev/null`;
unless (-d "$dir/node_modules/openai") {
    my $out = `cd '$dir' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
    is($?, 0, 'npm ci installed the client packages') or BAIL_OUT($out);
}

# one worker: the one serving the stream is the pool's only worker
my $s = SvcTest->start(workers => 1);
my $SLOW = '/slow 250 ' . join(' ', map { "w$_" } 1 .. 24);    # 6 s of deltas

sub curl_cmd {
    my ($sid) = @_;
    my $body = encode_json({ stream => JSON::PP::true, session_id => $sid,
                             messages => [{ role => 'user', content => $SLOW }] });
    return ('curl', '-sS', '-N', '-H', 'content-type: application/json', '--data-binary', $body,
            $s->url('/api/chat'));
}

# the master's children from /proc (health would wait for the busy worker)
my $master = $s->master_pid;
sub kill_worker {
    my @w = split ' ', SvcTest::read_file("/proc/$master/task/$master/children") // '';
    is(scalar @w, 1, 'one worker to kill');
    kill 'KILL', @w;
}

# curl: reads lines until three content deltas, then the worker dies
{
    my $err = $s->home . '/curl.err';
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open STDERR, '>', $err or POSIX::_exit(127);
        exec(curl_cmd('cut-curl')) or POSIX::_exit(127);
    }
    my ($n, @lines) = (0);
    while (my $l = <$fh>) {
        push @lines, $l;
        $n++ if $l =~ /"content":"w/;
        last if $n == 3;
    }
    is($n, 3, 'curl: three deltas before the kill');
    kill_worker();
    push @lines, $_ while <$fh>;
    close $fh;
    my $rc = $? >> 8;
    isnt($rc, 0, "curl: a non-zero exit ($rc)");
    like(SvcTest::read_file($err) // '', qr/curl: \(18\)/, 'curl: (18) transfer closed with outstanding read data');
    ok(!(grep { /\[DONE\]/ } @lines), 'curl: no [DONE]');
    ok(SvcTest::wait_for(10, sub { $s->log =~ /died during a run on session cut-curl/ }),
       'the pool saw the worker die during the run');
    # what docs/API.md ("A cut stream") tells client authors about the session
    my $d = $s->req(GET => '/api/v1/chat/sessions/cut-curl')->{json} // {};
    is($d->{status}, 'error', 'the session: status error');
    is($d->{last_error}{code}, 'interrupted', 'last_error interrupted');
    is($d->{message_count}, 1, 'the user message stored, no assistant message');
    my $next = $s->req(POST => '/api/chat', body => { session_id => 'cut-curl',
                    messages => [{ role => 'user', content => 'again' }] });
    is($next->{status}, 200, 'the next turn runs');
}

# the openai client: it must throw, not return the cut-off text as an answer
{
    local $ENV{SVC_BASE} = $s->url('/api/v1');
    local $ENV{SVC_SID} = 'cut-openai';
    local $ENV{SVC_PROMPT} = $SLOW;
    my $pid = open(my $fh, '-|', "cd '$dir' && exec timeout 60 node cut.mjs 2>&1") // die "node: $!";
    my $ready = <$fh> // '';
    like($ready, qr/"ready":true/, 'openai: three deltas before the kill');
    kill_worker();
    my $res = eval { decode_json(<$fh> // '') } // {};
    close $fh;
    ok($res->{threw}, 'openai: the stream throws') or diag(explain $res);
    like($res->{error} // '', qr/\S/, 'openai: with a message (' . ($res->{error} // '') . ')');
    unlike($res->{text} // '', qr/w24/, 'openai: the text stops where the worker died');
}

# a complete stream: event by event (the first delta long before the end), curl exits 0
{
    my $t0 = time;
    my $pid = open(my $fh, '-|', curl_cmd('whole')) // die "curl: $!";
    my ($first, @lines);
    while (my $l = <$fh>) {
        $first //= time - $t0 if $l =~ /"content":"w1 /;
        push @lines, $l;
    }
    close $fh;
    my $total = time - $t0;
    is($? >> 8, 0, 'whole stream: curl exits 0');
    like($lines[-2] // '', qr/^data: \[DONE\]/, 'whole stream: ends with [DONE]');
    ok(defined $first && $first < 2 && $total > 5,
       sprintf('whole stream: first delta after %.2f s of %.2f s', $first // -1, $total));
}

$s->stop;
done_testing;
