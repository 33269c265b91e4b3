#!/usr/bin/perl
# Runs that fail (SPEC 3, 4.1, 4.2): server.run_timeout_s cancels a run with run_timeout;
# a model server that cannot be reached fails the run with upstream_error, and a 5xx after
# the run began carries x-should-retry: false.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use IO::Socket::INET;
use Time::HiRes qw(time sleep);
use SvcTest;

my $J = JSON::PP->new->utf8->canonical;
my $s;    # the server the helpers talk to

# ---- local helpers ----
sub post_run {
    my ($sid, $text, %o) = @_;
    return $s->req(POST => '/api/chat/runs', headers => $o{headers} || {},
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub chat {
    my ($sid, $text, %o) = @_;
    return $s->req(POST => '/api/chat', headers => $o{headers} || {},
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub wait_run { $s->wait_run(@_) }
sub events {
    my ($id) = @_;
    return $s->sse("/api/chat/runs/$id/events?cursor=0", method => 'GET', timeout => 20)->{events};
}
sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub turn_lines { $s->turn_lines(@_) }
sub roles_on_disk { map { ref ? $_->{role} : $_ } @{ $s->stored($_[0]) } }

# ==== run_timeout_s: 1 ====
$s = SvcTest->start(workers => 2, config => "server:\n  run_timeout_s: 1\n");

my $t0 = time;
my $r = post_run('f-timeout', '/slow 400 one two three four five six seven eight nine ten');
is $r->{status}, 202, 'timeout: run 202';
my $rid = $r->{json}{run_id};
$r = wait_run($rid, 10);
my $took = time - $t0;
is $r->{json}{status}, 'cancelled', 'timed-out run: status cancelled';
is $r->{json}{error}{code}, 'run_timeout', 'record error.code run_timeout';
ok $took < 3.5, sprintf('cut near the 1 s limit (%.1fs; the answer needs 4.4 s)', $took);
my @ev = @{ events($rid) };
is $ev[-1]{type}, 'error', 'final event: error';
is $ev[-1]{code}, 'run_timeout', 'final event code run_timeout';
is scalar(grep { $_->{type} eq 'error' || $_->{type} eq 'done' } @ev), 1, 'one final event';
is_deeply [map { $_->{seq} } @ev], [1 .. scalar @ev], 'seq contiguous';
my $sc = session('f-timeout');
is $sc->{status}, 'cancelled', 'session status cancelled';
is $sc->{last_error}{code}, 'run_timeout', 'session last_error.code run_timeout';
my @t = turn_lines('f-timeout');
is scalar @t, 1, 'one turn line';
is $t[0]{status}, 'cancelled', 'turn line status cancelled';
is $t[0]{error}{code}, 'run_timeout', 'turn line error.code run_timeout';
is_deeply [roles_on_disk('f-timeout')], ['user'], 'no half-written assistant message';
$r = $s->req(POST => "/api/chat/runs/$rid/cancel");
is $r->{status}, 409, 'cancel a timed-out run: 409';
is $r->{json}{error}{code}, 'run_not_active', 'run_not_active';
# a quick run still works on the same session
$r = post_run('f-timeout', 'quick');
is wait_run($r->{json}{run_id})->{json}{status}, 'done', 'a quick run after the timeout: done';
is session('f-timeout')->{status}, 'idle', 'session idle again';

# the synchronous endpoint: 504 run_timeout after the run began, not to be retried
$r = chat('f-timeout-sync', '/slow 400 a b c d e f g h');
is $r->{status}, 504, 'sync timeout: 504';
is $r->{json}{error}{code}, 'run_timeout', 'sync: run_timeout';
is $r->{headers}{'x-should-retry'}, 'false', 'sync timeout: x-should-retry: false';
is session('f-timeout-sync')->{last_error}{code}, 'run_timeout', 'sync: last_error run_timeout';
is((turn_lines('f-timeout-sync'))[0]{status}, 'cancelled', 'sync: turn line cancelled');
$s->stop;

# ==== a model server that cannot be reached ====
my $closed = SvcTest::free_port();    # nobody listens there
$s = SvcTest->start(workers => 2, config => <<"YAML");
model:
  provider: openai
  name: gpt-test
  base_url: http://127.0.0.1:$closed/v1
  api_key: sk-secret-do-not-leak
  max_retries: 0
  timeout_s: 2
YAML

$r = chat('f-up', 'hello?');
is $r->{status}, 502, 'unreachable model: 502';
is $r->{json}{error}{code}, 'upstream_error', 'upstream_error';
is $r->{json}{error}{type}, 'upstream_error', 'error type upstream_error';
is $r->{headers}{'x-should-retry'}, 'false', 'a 5xx after the run began: x-should-retry: false';
unlike $r->{body}, qr/sk-secret-do-not-leak/, 'the key is not in the answer';
$sc = session('f-up');
is $sc->{status}, 'error', 'session status error';
is $sc->{last_error}{code}, 'upstream_error', 'last_error upstream_error';
@t = turn_lines('f-up');
is scalar @t, 1, 'one turn line';
is $t[0]{status}, 'error', 'turn line status error';
is_deeply [roles_on_disk('f-up')], ['user'], 'only the user message';

# a 4xx before any run began says x-should-retry: false (SPEC 4.1: every 4xx but 408, 409 busy, 429)
$r = $s->req(POST => '/api/chat', body => '{"messages": 5}');
is $r->{status}, 422, 'bad body: 422';
is $r->{headers}{'x-should-retry'}, 'false', 'a 4xx: x-should-retry false (a retry cannot succeed)';

# a failed run is not replayed by its Idempotency-Key: the retry runs again
$r = chat('f-up-idem', 'once', headers => { 'idempotency-key' => 'k1' });
is $r->{status}, 502, 'idem: first 502';
$r = chat('f-up-idem', 'once', headers => { 'idempotency-key' => 'k1' });
is $r->{status}, 502, 'idem: retry runs again (502)';
ok !defined $r->{headers}{'idempotent-replayed'}, 'idem: a failure is not replayed';
is scalar(turn_lines('f-up-idem')), 2, 'idem: two failed turns';

# streaming: the error arrives as an SSE error event
my $st = $s->sse('/api/chat', body => { stream => JSON::PP::true, session_id => 'f-up-stream',
                                        messages => [{ role => 'user', content => 'hi' }] });
if ($st->{status} == 200) {
    my $last = $st->{events}[-1];
    is ref $last && $last->{error}{code}, 'upstream_error', 'stream: error event upstream_error';
    ok !(grep { !ref && $_ eq '[DONE]' } @{ $st->{events} }), 'stream: no [DONE] after the error';
} else {
    is $st->{status}, 502, 'stream: 502 before the stream began';
    is $st->{headers}{'x-should-retry'}, 'false', 'stream: x-should-retry: false';
}

# asynchronous: the run ends in error with upstream_error
$r = post_run('f-up-async', 'hello async');
is $r->{status}, 202, 'async: 202 (the failure comes later)';
is $r->{json}{model}, 'gpt-test', 'async: model';
my $arid = $r->{json}{run_id};
$r = wait_run($arid, 10);
is $r->{json}{status}, 'error', 'async: status error';
is $r->{json}{error}{code}, 'upstream_error', 'async: error.code upstream_error';
unlike $r->{body}, qr/sk-secret-do-not-leak/, 'async: the key is not in the record';
@ev = @{ events($arid) };
is $ev[-1]{type}, 'error', 'async: events end with error';
is $ev[-1]{code}, 'upstream_error', 'async: error event code';
is scalar(grep { $_->{type} eq 'error' || $_->{type} eq 'done' } @ev), 1, 'async: one final event';
is session('f-up-async')->{status}, 'error', 'async: session status error';
is((turn_lines('f-up-async'))[0]{status}, 'error', 'async: turn line error');
my $raw = join '', map { SvcTest::read_file($_) // '' } glob($s->root . '/.svc_runs/*');
unlike $raw, qr/sk-secret-do-not-leak/, 'the key is in no run file';

$s->stop;
unlike $s->log, qr/sk-secret-do-not-leak/, 'the key is not in the log';
done_testing;
