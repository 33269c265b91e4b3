#!/usr/bin/perl
# Run accounting that a new user checked (issue 10, item 5): token_usage events carry the
# session's cumulative counts (equal to token_state in svc_session.json); a cancelled run
# reports the usage of the text it produced; a run id returned by /api/chat is found by
# GET /api/chat/runs/{id}; a repaired (interrupted) run's turn line names its input message
# and carries its events; /api/config shows the command-line overrides the pool runs with.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep);
use SvcTest;

my $s = SvcTest->start(workers => 3);
my $T = JSON::PP::true;

sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} || {} }
sub sidecar { my $t = SvcTest::read_file($s->root . "/session_$_[0]/svc_session.json"); $t ? decode_json($t) : {} }
sub chat {
    my ($sid, $text, %o) = @_;
    return $s->req(POST => '/api/chat', body => { session_id => $sid, messages => [{ role => 'user', content => $text }],
        metadata => { event_format => 'svc.v2' }, %o });
}
sub message_ids {
    my ($sid) = @_;
    opendir my $d, $s->root . "/session_$sid/agents/agent_svc-agent/messages" or return ();
    return sort { $a <=> $b } map { /^message_(\d+)\.json$/ ? $1 : () } readdir $d;
}
my @TS = qw(last_prompt_tokens last_completion_tokens last_total_tokens cumulative_prompt_tokens
            cumulative_completion_tokens cumulative_total_tokens model_context_window utilization_ratio
            loop_count removed_message_count);
sub same_tokens {
    my ($ev, $ts, $name) = @_;
    my @bad = grep { !defined $ev->{$_} || !defined $ts->{$_} || abs($ev->{$_} - $ts->{$_}) > 1e-9 } @TS;
    ok !@bad, $name or diag explain { event => { map { $_ => $ev->{$_} } @TS }, token_state => $ts };
}

# ---- token_usage is the session's count, equal to token_state ----
my @turns = (chat('tu-1', 'first turn of words'), chat('tu-1', 'second turn, longer than the first one'),
             chat('tu-1', '/tool clock {}'));
is $_->{status}, 200, 'chat 200' for @turns;
my $ts = sidecar('tu-1')->{token_state};
my @tu = grep { $_->{type} eq 'token_usage' } @{ $turns[-1]{json}{svc}{events} };
is scalar @tu, 2, 'a tool turn: two model calls, two token_usage events';
same_tokens($tu[-1], $ts, 'last token_usage event == token_state in svc_session.json');
my $sum = 0;
$sum += $_->{json}{usage}{total_tokens} for @turns;
is $ts->{cumulative_total_tokens}, $sum, 'cumulative_total_tokens: the sum of the three runs';
ok $tu[-1]{cumulative_total_tokens} > $tu[-1]{last_total_tokens}, 'cumulative beyond the run (the session\'s)';
is $tu[0]{cumulative_total_tokens}, $turns[0]{json}{usage}{total_tokens} + $turns[1]{json}{usage}{total_tokens}
    + $tu[0]{last_total_tokens}, 'first event of the run: earlier runs + this call';
my @tl = $s->turn_lines('tu-1');
my @tl_tu = grep { $_->{type} eq 'token_usage' } @{ $tl[-1]{events} };
same_tokens($tl_tu[-1], $ts, 'turn line: last token_usage == token_state');
is $s->req(GET => '/api/chat/sessions/tu-1/tokens')->{json}{cumulative_total_tokens}, $sum, 'tokens endpoint agrees';

# the Responses API goes through the same lifecycle
my $r = $s->req(POST => '/api/v1/responses', body => { input => 'via responses', conversation => 'tu-1',
    metadata => { event_format => 'svc.v2' } });
@tu = grep { $_->{type} eq 'token_usage' } @{ $r->{json}{svc}{events} };
same_tokens($tu[-1], sidecar('tu-1')->{token_state}, 'responses: token_usage == token_state');

# ---- a run id from /api/chat is found by GET /api/chat/runs/{id} ----
my $c = $turns[0]{json};
$r = $s->req(GET => "/api/chat/runs/$c->{run_id}");
is $r->{status}, 200, 'sync run: GET /api/chat/runs/{id} 200';
is $r->{json}{status}, 'done', 'sync run: done';
is $r->{json}{session_id}, 'tu-1', 'sync run: session';
is $r->{json}{content}, $c->{content}, 'sync run: content';
is_deeply $r->{json}{usage}, $c->{usage}, 'sync run: usage';
my $evs = $s->sse("/api/chat/runs/$c->{run_id}/events", method => 'GET', body => '');
is_deeply [map { $_->{seq} } @{ $evs->{events} }], [map { $_->{seq} } @{ $c->{svc}{events} }], 'sync run: events replayed';
is $evs->{events}[-1]{type}, 'done', 'sync run: events end with done';
# the Responses API's run too
$r = $s->req(POST => '/api/v1/responses', body => { input => 'find my run' });
is $s->req(GET => "/api/chat/runs/$r->{json}{run_id}")->{json}{status}, 'done', 'responses run: found by run id';

# ---- a cancelled run reports the usage of the text it produced ----
my $st = $s->sse('/api/chat', body => { session_id => 'cx-1', stream => $T,
    messages => [{ role => 'user', content => '/slow 150 one two three four five six seven eight nine ten' }] },
    abort_after => 5);
SvcTest::wait_for(15, sub { (session('cx-1')->{status} // '') eq 'cancelled' });
is session('cx-1')->{status}, 'cancelled', 'client gone: run cancelled';
@tl = $s->turn_lines('cx-1');
is $tl[-1]{status}, 'cancelled', 'turn line cancelled';
ok $tl[-1]{usage}{completion_tokens} > 0, 'cancelled run: completion tokens of the text produced'
    or diag explain $tl[-1]{usage};
ok $tl[-1]{usage}{prompt_tokens} > 0, 'cancelled run: prompt tokens';
$ts = sidecar('cx-1')->{token_state};
is $ts->{last_completion_tokens}, $tl[-1]{usage}{completion_tokens}, 'token_state counts it';
is $ts->{cumulative_total_tokens}, $tl[-1]{usage}{total_tokens}, 'cumulative counts it';
my $cx_run = $tl[-1]{run_id};
$r = $s->req(GET => "/api/chat/runs/$cx_run");
is $r->{json}{status}, 'cancelled', 'cancelled sync run: found by run id, cancelled';
is $r->{json}{usage}{completion_tokens}, $tl[-1]{usage}{completion_tokens}, 'cancelled run record: the same usage';

# ---- a repaired run's turn line: input message, outputs, events ----
# (a) an asynchronous run whose runner dies: its recorded events go into the turn line
$r = $s->req(POST => '/api/chat/runs', body => { session_id => 'rp-1',
    messages => [{ role => 'user', content => '/slow 300 a b c d e f g h i j k l' }] });
my $rid = $r->{json}{run_id};
SvcTest::wait_for(10, sub { ($s->req(GET => "/api/chat/runs/$rid")->{json}{event_count} // 0) >= 4 });
my $runner = sidecar('rp-1')->{current_run}{pid};
ok $runner && $runner != $s->master_pid, 'the runner pid is recorded';
SKIP: {
    skip 'no runner', 8 unless $runner;
    kill 'KILL', $runner;
    SvcTest::wait_for(10, sub { !kill(0, $runner) || (SvcTest::read_file("/proc/$runner/stat") // '') =~ /\)\s+Z/ });
    my $sc = session('rp-1');    # a reader repairs it
    is $sc->{status}, 'error', 'async: repaired to error';
    @tl = $s->turn_lines('rp-1');
    my $t = $tl[-1];
    is $t->{error}{code}, 'interrupted', 'async: turn line interrupted';
    my @ids = message_ids('rp-1');
    is $t->{input_message_id}, $ids[0], 'async: input_message_id names the stored input';
    is_deeply $t->{output_message_ids}, [@ids[1 .. $#ids]], 'async: outputs are the messages after it';
    ok((grep { $_->{type} eq 'delta' } @{ $t->{events} }), 'async: the recorded events are in the turn line');
    is $t->{events}[-1]{type}, 'error', 'async: events end with error';
    is $t->{events}[-1]{code}, 'interrupted', 'async: error interrupted';
    is_deeply [map { $_->{seq} } @{ $t->{events} }], [1 .. scalar @{ $t->{events} }], 'async: seq contiguous';
}

# (b) a synchronous run whose worker dies mid-stream
chat('rp-2', 'before');
my $killed;
$st = $s->sse('/api/chat', body => { session_id => 'rp-2', stream => $T,
    messages => [{ role => 'user', content => '/slow 300 a b c d e f g h i j' }] },
    stop_if => sub {
        my ($ev) = @_;
        return 0 if @$ev < 3;
        my $pid = sidecar('rp-2')->{current_run}{pid};
        $killed = $pid if $pid && kill('KILL', $pid);
        return 1;
    });
ok $killed, 'the worker running the stream was killed';
SvcTest::wait_for(10, sub { !kill(0, $killed) || (SvcTest::read_file("/proc/$killed/stat") // '') =~ /\)\s+Z/ });
is session('rp-2')->{status}, 'error', 'sync: repaired to error';
@tl = $s->turn_lines('rp-2');
my @ids = message_ids('rp-2');
is scalar @tl, 2, 'sync: two turn lines';
is $tl[-1]{input_message_id}, $ids[-1], 'sync: input_message_id names the stored input (no output yet)';
is_deeply $tl[-1]{output_message_ids}, [], 'sync: no outputs';
is_deeply [map { $_->{type} } @{ $tl[-1]{events} }], ['error'], 'sync: the one error event';
is $tl[-1]{events}[0]{code}, 'interrupted', 'sync: interrupted';
is chat('rp-2', 'after')->{status}, 200, 'the session runs again';

# ---- /api/config: the values the pool runs with ----
my $cfg = $s->req(GET => '/api/config')->{json};
is $cfg->{server}{workers}, 3, '/api/config: --workers 3 (the file says nothing: default 4)';
my ($listen) = $s->log =~ /listening on (unix:\S+)/;
ok $listen, 'the pool logged its socket';
is $cfg->{server}{listen}, $listen, '/api/config: the --listen socket';
$s->stop;

done_testing;
