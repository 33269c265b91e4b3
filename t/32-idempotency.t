#!/usr/bin/perl
# Idempotency-Key (SPEC 4.1, 4.2): a repeated key on the same session yields one turn, for
# POST /api/chat (plain and streaming) and POST /api/chat/runs.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $J = JSON::PP->new->utf8->canonical;
my $T = JSON::PP::true;

# ---- local helpers ----
sub chat {
    my ($sid, $text, $key, %o) = @_;
    return $s->req(POST => '/api/chat', headers => { ($key ? ('idempotency-key' => $key) : ()) },
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }], %o });
}
sub post_run {
    my ($sid, $text, $key) = @_;
    return $s->req(POST => '/api/chat/runs', headers => { ($key ? ('idempotency-key' => $key) : ()) },
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub wait_run { $s->wait_run(@_) }
sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} }
sub turn_lines { $s->turn_lines(@_) }
sub message_files {
    my ($sid) = @_;
    my $dir = $s->root . "/session_$sid/agents/agent_svc-agent/messages";
    opendir my $d, $dir or return ();
    return grep { /^message_\d+\.json$/ } readdir $d;
}

# ---- /api/chat: the same key twice -> one turn ----
my $a = chat('i-chat', 'pay once', 'key-1');
is $a->{status}, 200, 'first: 200';
ok !defined $a->{headers}{'idempotent-replayed'}, 'first: not replayed';
my $b = chat('i-chat', 'pay once', 'key-1');
is $b->{status}, 200, 'second: 200';
is $b->{headers}{'idempotent-replayed'}, 'true', 'second: Idempotent-Replayed';
is $b->{json}{run_id}, $a->{json}{run_id}, 'same run_id';
is $b->{json}{id}, $a->{json}{id}, 'same completion id';
is $b->{json}{content}, $a->{json}{content}, 'same content';
is $b->{json}{choices}[0]{message}{content}, $a->{json}{content}, 'same message content';
is_deeply $b->{json}{usage}, $a->{json}{usage}, 'same usage';
is $b->{json}{session_id}, 'i-chat', 'session_id';
is $b->{headers}{'x-session-id'}, 'i-chat', 'X-Session-Id on the replay';
my $sc = session('i-chat');
is $sc->{turn_count}, 1, 'turn_count 1';
is $sc->{run_count}, 1, 'run_count 1';
is $sc->{message_count}, 2, 'message_count 2';
is scalar(message_files('i-chat')), 2, 'two message files';
is scalar(turn_lines('i-chat')), 1, 'one turn line';

# a third time, streaming: the stored answer as a stream
my $st = $s->sse('/api/chat', headers => { 'idempotency-key' => 'key-1' }, body => {
    stream => $T, session_id => 'i-chat', messages => [{ role => 'user', content => 'pay once' }] });
is $st->{status}, 200, 'streamed replay: 200';
is $st->{headers}{'idempotent-replayed'}, 'true', 'streamed replay: Idempotent-Replayed';
is $st->{events}[-1], '[DONE]', 'streamed replay ends with [DONE]';
is join('', map { $_->{choices}[0]{delta}{content} // '' } grep { ref } @{ $st->{events} }),
    $a->{json}{content}, 'streamed replay content';
is session('i-chat')->{turn_count}, 1, 'still one turn after the streamed replay';

# another key, or no key: a new turn
my $c = chat('i-chat', 'pay once', 'key-2');
isnt $c->{json}{run_id}, $a->{json}{run_id}, 'another key: a new run';
ok !defined $c->{headers}{'idempotent-replayed'}, 'another key: not replayed';
my $d = chat('i-chat', 'pay once');
isnt $d->{json}{run_id}, $c->{json}{run_id}, 'no key: a new run';
is session('i-chat')->{turn_count}, 3, 'three turns now';
# the same key on another session is another request
my $o = chat('i-other', 'pay once', 'key-1');
isnt $o->{json}{run_id}, $a->{json}{run_id}, 'same key, other session: a new run';
ok !defined $o->{headers}{'idempotent-replayed'}, 'same key, other session: not replayed';
is session('i-other')->{turn_count}, 1, 'other session: one turn';

# a first request that was streamed, then repeated without stream
$st = $s->sse('/api/chat', headers => { 'idempotency-key' => 'key-s' }, body => {
    stream => $T, session_id => 'i-stream', messages => [{ role => 'user', content => 'streamed first' }] });
my ($rid_s) = map { $_->{run_id} } grep { ref } @{ $st->{events} };
my $again = chat('i-stream', 'streamed first', 'key-s');
is $again->{headers}{'idempotent-replayed'}, 'true', 'stream then plain: replayed';
is $again->{json}{run_id}, $rid_s, 'stream then plain: same run_id';
is session('i-stream')->{turn_count}, 1, 'stream then plain: one turn';

# svc.v2: the stored answer includes the run's events, on the replay too
my $v1 = chat('i-v2', 'with events', 'kv2', metadata => { event_format => 'svc.v2' });
ok $v1->{json}{svc} && @{ $v1->{json}{svc}{events} }, 'svc.v2: first answer has svc.events';
my $v2 = chat('i-v2', 'with events', 'kv2', metadata => { event_format => 'svc.v2' });
is $v2->{headers}{'idempotent-replayed'}, 'true', 'svc.v2: replayed';
is $v2->{json}{run_id}, $v1->{json}{run_id}, 'svc.v2: same run_id';
{
        is_deeply $v2->{json}{svc}, $v1->{json}{svc}, 'svc.v2 replay: same svc block (schema_version, run_id, events)';
    my $sv = $s->sse('/api/chat', headers => { 'idempotency-key' => 'kv2' }, body => {
        stream => $T, session_id => 'i-v2', metadata => { event_format => 'svc.v2' },
        messages => [{ role => 'user', content => 'with events' }] });
    my @se = map { $_->{svc_event} } grep { ref && $_->{svc_event} } @{ $sv->{events} };
    is_deeply [map { $_->{seq} } @se], [map { $_->{seq} } grep { $_->{type} ne 'done' && $_->{type} ne 'error' } @{ $v1->{json}{svc}{events} }],
        'svc.v2 streamed replay: chunks carry the stored svc_event';
}
is session('i-v2')->{turn_count}, 1, 'svc.v2: one turn';

# ---- /api/chat/runs: the same key returns the same run ----
my $r1 = post_run('i-runs', '/slow 100 only once please', 'rk-1');
is $r1->{status}, 202, 'runs: first 202';
my $run_id = $r1->{json}{run_id};
my $r2 = post_run('i-runs', '/slow 100 only once please', 'rk-1');
is $r2->{status}, 202, 'runs: repeated while running: 202 (not session_busy)';
is $r2->{json}{run_id}, $run_id, 'runs: same run_id while running';
is $r2->{headers}{'idempotent-replayed'}, 'true', 'runs: the repeat says it was replayed';
ok !defined $r1->{headers}{'idempotent-replayed'}, 'runs: the first one does not';
is $r2->{json}{session_id}, 'i-runs', 'runs: session_id';
my $done = wait_run($run_id);
is $done->{json}{status}, 'done', 'runs: done';
my $r3 = post_run('i-runs', '/slow 100 only once please', 'rk-1');
is $r3->{status}, 202, 'runs: repeated after the end: 202';
is $r3->{json}{run_id}, $run_id, 'runs: same run_id after the end';
is $r3->{json}{status}, 'done', 'runs: the replay reports the run status';
sleep 0.3;
$sc = session('i-runs');
is $sc->{turn_count}, 1, 'runs: turn_count 1';
is $sc->{run_count}, 1, 'runs: run_count 1';
is scalar(turn_lines('i-runs')), 1, 'runs: one turn line';
is scalar(message_files('i-runs')), 2, 'runs: two message files';
my $r4 = post_run('i-runs', 'another', 'rk-2');
isnt $r4->{json}{run_id}, $run_id, 'runs: another key, another run';
wait_run($r4->{json}{run_id});

# concurrent duplicates: each is either the same run (202) or session_busy (409, retry
# later); exactly one run happens, and a retry afterwards gets that run
my @kids;
for my $i (1 .. 3) {
    pipe my $rd, my $wr or die;
    my $pid = fork // die;
    if (!$pid) {
        close $rd;
        my $x = post_run('i-conc', '/slow 50 concurrent duplicate', 'ck');
        syswrite $wr, "$x->{status} " . ($x->{json}{run_id} // $x->{json}{error}{code} // '') . "\n";
        POSIX::_exit(0);
    }
    close $wr;
    push @kids, [$pid, $rd];
}
my @ans;
for (@kids) { my $fh = $_->[1]; my $l = <$fh> // ''; chomp $l; push @ans, $l; waitpid $_->[0], 0 }
my @ok = grep { /^202 run-/ } @ans;
ok @ok >= 1, 'concurrent duplicates: at least one 202' or diag explain \@ans;
ok !(grep { !/^202 run-/ && $_ ne '409 session_busy' } @ans), 'others: 202 or 409 session_busy'
    or diag explain \@ans;
my %ids = map { (split ' ')[1] => 1 } @ok;
is scalar(keys %ids), 1, 'concurrent duplicates: one run_id';
my ($cid) = keys %ids;
wait_run($cid) if $cid;
my $retry = post_run('i-conc', '/slow 50 concurrent duplicate', 'ck');
is $retry->{json}{run_id}, $cid, 'a retry afterwards gets that run';
is session('i-conc')->{run_count}, 1, 'concurrent duplicates: one run';
is scalar(turn_lines('i-conc')), 1, 'concurrent duplicates: one turn line';

# the idempotency records live beside the runs; they are not runs
opendir my $dh, $s->root . '/.svc_runs' or die;
my @idem = map { /^(idem-[0-9a-f]+)\.json$/ ? $1 : () } readdir $dh;
closedir $dh;
ok @idem >= 3, 'idempotency records on disk';
is $s->req(GET => "/api/chat/runs/$idem[0]")->{status}, 404, 'GET /api/chat/runs/idem-...: 404';
is $s->req(POST => "/api/chat/runs/$idem[0]/cancel")->{status}, 404, 'cancel idem-...: 404';

$s->stop;
done_testing;
