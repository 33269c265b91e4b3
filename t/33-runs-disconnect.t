#!/usr/bin/perl
# Clients that go away (SPEC 3, 4.1, 4.2): a streaming /api/chat client that disconnects
# cancels its run; a client that leaves a run's event stream does not.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $J = JSON::PP->new->utf8->canonical;
my $T = JSON::PP::true;

# ---- local helpers ----
sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub turn_lines { $s->turn_lines(@_) }
# Send an HTTP request by hand; read until $until matches what came back (or $timeout
# passes); return (socket, text read so far). The caller closes the socket.
sub raw_request {
    my ($method, $path, $body, $until, $timeout) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $s->port, Proto => 'tcp')
        or die "connect: $!";
    my $req = "$method $path HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            . "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n"
            . "Connection: close\r\n\r\n$body";
    syswrite $sock, $req;
    my $sel = IO::Select->new($sock);
    my $got = '';
    my $deadline = time + ($timeout // 10);
    while (time < $deadline && $got !~ $until) {
        next unless $sel->can_read(0.1);
        my $n = sysread $sock, $got, 4096, length $got;
        last unless $n;
    }
    return ($sock, $got);
}

# ---- a streaming client disconnects: the run is cancelled ----
my $words = join ' ', map { "word$_" } 1 .. 30;
my $body = $J->encode({ stream => $T, session_id => 'd-stream',
                        messages => [{ role => 'user', content => "/slow 300 $words" }] });
my ($sock, $got) = raw_request(POST => '/api/chat', $body, qr/"content":"Echo: ?"/);
like $got, qr{^HTTP/1\.1 200}, 'stream started: 200';
like $got, qr{text/event-stream}, 'event stream';
like $got, qr/"content":"Echo: ?"/, 'first content chunk read';
my ($rid) = $got =~ /"run_id":"(run-[0-9a-f]+)"/;
ok $rid, 'run id from the chunks';
is session('d-stream')->{status}, 'running', 'running before the disconnect';
my $t0 = time;
close $sock;
ok SvcTest::wait_for(5, sub { (session('d-stream')->{status} // '') eq 'cancelled' }),
    'disconnect cancelled the run';
my $took = time - $t0;
ok $took < 4, sprintf('cancelled soon after the disconnect (%.1fs; the answer needs 9s)', $took);
my $sc = session('d-stream');
is $sc->{last_error}{code}, 'cancelled', 'last_error.code cancelled';
is $sc->{last_error}{run_id}, $rid, 'last_error.run_id';
ok !defined $sc->{current_run}, 'current_run null';
my @turns = turn_lines('d-stream');
is scalar @turns, 1, 'one turn line';
is $turns[0]{status}, 'cancelled', 'turn line status cancelled';
is $turns[0]{run_id}, $rid, 'turn line run_id';
is $turns[0]{events}[-1]{type}, 'error', 'turn events end with error';
is $turns[0]{events}[-1]{code}, 'cancelled', 'turn error event code cancelled';
my @m = @{ $s->stored('d-stream') };
ok !(grep { !ref } @m), 'every message file parses';
is_deeply [map { $_->{role} } @m], ['user'], 'no assistant message of the cancelled run';
is $sc->{message_count}, 1, 'message_count 1';
my $n = $s->req(POST => '/api/chat', body => { session_id => 'd-stream',
                                               messages => [{ role => 'user', content => 'next' }] });
is $n->{status}, 200, 'next run on the session succeeds';
is session('d-stream')->{status}, 'idle', 'session idle again';

# the alias endpoint too, and a disconnect before any content (during the first pause)
$body = $J->encode({ stream => $T, session_id => 'd-alias',
                     messages => [{ role => 'user', content => "/slow 300 $words" }] });
($sock, $got) = raw_request(POST => '/api/v1/chat/completions', $body, qr/"role":"assistant"/);
like $got, qr/"role":"assistant"/, 'alias: role chunk read';
close $sock;
ok SvcTest::wait_for(6, sub { (session('d-alias')->{status} // '') eq 'cancelled' }),
    'alias: disconnect cancelled the run';
is session('d-alias')->{last_error}{code}, 'cancelled', 'alias: last_error cancelled';
is((turn_lines('d-alias'))[0]{status}, 'cancelled', 'alias: turn line cancelled');

# ---- leaving a run's event stream does not cancel the run ----
my $r = $s->req(POST => '/api/chat/runs', body => { session_id => 'd-events',
    messages => [{ role => 'user', content => '/slow 100 a b c d e f g h i j' }] });
is $r->{status}, 202, 'run 202';
my $erid = $r->{json}{run_id};
($sock, $got) = raw_request(GET => "/api/chat/runs/$erid/events?cursor=0", '', qr/"type":"delta"/);
like $got, qr/"type":"delta"/, 'events: a delta read';
close $sock;
my $deadline = time + 10;
my $rec;
while (time < $deadline) {
    $rec = $s->req(GET => "/api/chat/runs/$erid")->{json};
    last if ($rec->{status} // 'running') ne 'running';
    sleep 0.1;
}
is $rec->{status}, 'done', 'the run finished after its reader left';
is $rec->{content}, 'Echo: a b c d e f g h i j (I was given 0 earlier messages.)', 'content';
is session('d-events')->{status}, 'idle', 'session idle';

$s->stop;
done_testing;
