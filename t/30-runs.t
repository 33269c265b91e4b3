#!/usr/bin/perl
# Asynchronous runs (SPEC 3, 4.2) through nginx: create, poll, events replay and live
# follow, cursors, cancel, session_busy, unknown and invalid run ids, a run that nobody
# reads.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 3, env => { SVC_PING_INTERVAL_S => 1 });
my $J = JSON::PP->new->utf8->canonical;

# ---- local helpers ----
sub post_run {
    my ($sid, $text, %o) = @_;
    my %b = (messages => [{ role => 'user', content => $text }]);
    $b{session_id} = $sid if defined $sid;
    return $s->req(POST => '/api/chat/runs', body => \%b, headers => $o{headers} || {});
}
sub get_run { $s->req(GET => "/api/chat/runs/$_[0]") }
# Poll until the run is no longer `running` (bounded); returns the last response.
sub wait_run { $s->wait_run(@_) }
sub events {
    my ($id, $cursor, %o) = @_;
    return $s->sse("/api/chat/runs/$id/events?cursor=" . ($cursor // 0), method => 'GET',
                   timeout => 20, %o);
}
sub session { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} }
sub wait_session_status {
    my ($sid, $want, $timeout) = @_;
    return SvcTest::wait_for($timeout // 10, sub { (session($sid)->{status} // '') eq $want });
}
sub echo_of { my ($words) = @_; "Echo: $words (I was given $_[1] earlier messages.)" }
sub read_json_file { my $t = SvcTest::read_file($_[0]); defined $t ? eval { $J->decode($t) } : undef }
sub turn_lines { $s->turn_lines(@_) }
sub message_files {
    my ($sid) = @_;
    my $dir = $s->root . "/session_$sid/agents/agent_svc-agent/messages";
    opendir my $d, $dir or return ();
    my @f = sort { ($a =~ /(\d+)/)[0] <=> ($b =~ /(\d+)/)[0] } grep { /^message_\d+\.json$/ } readdir $d;
    return map { "$dir/$_" } @f;
}

# ---- a run completes ----
my $r = post_run('r-one', 'hello async world');
is $r->{status}, 202, 'POST /api/chat/runs: 202';
my $run = $r->{json} || {};
like $run->{run_id}, qr/^run-[0-9a-f]+$/, 'run_id';
is $run->{session_id}, 'r-one', 'session_id';
is $run->{status}, 'running', 'status running';
is $run->{model}, 'echo-1', 'model';
is $r->{headers}{'x-session-id'}, 'r-one', 'X-Session-Id header';
my $rid = $run->{run_id};

$r = wait_run($rid);
is $r->{status}, 200, 'GET run: 200';
my $rec = $r->{json} || {};
is $rec->{status}, 'done', 'run finished: done';
is $rec->{run_id}, $rid, 'record run_id';
is $rec->{session_id}, 'r-one', 'record session_id';
is $rec->{content}, echo_of('hello async world', 0), 'record content';
ok $rec->{usage} && $rec->{usage}{total_tokens} > 0, 'record usage';
is $rec->{usage}{total_tokens}, $rec->{usage}{prompt_tokens} + $rec->{usage}{completion_tokens},
    'usage adds up';
ok $rec->{event_count} > 2, 'event_count';
like $rec->{created_at} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, 'created_at';
like $rec->{finished_at} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/, 'finished_at';
ok exists $rec->{error} && !defined $rec->{error}, 'error null';
like $rec->{created_at} // '', qr/\.\d{6}\+00:00$/, 'created_at: microseconds, +00:00';
like $rec->{finished_at} // '', qr/\.\d{6}\+00:00$/, 'finished_at: microseconds, +00:00';
ok(($rec->{finished_at} // '') ge ($rec->{created_at} // 'z'), 'finished_at not before created_at');
is $rec->{model}, 'echo-1', 'record model';
is session('r-one')->{status}, 'idle', 'session idle after the run';

# full replay
my $e = events($rid, 0);
is $e->{status}, 200, 'events: 200';
like $e->{headers}{'content-type'} // '', qr{^text/event-stream}, 'events: text/event-stream';
my @full = @{ $e->{events} };
is scalar @full, $rec->{event_count}, 'replay has event_count events';
is scalar(grep { ref && $_->{type} eq 'done' } @full), 1, 'exactly one done';
is $full[-1]{type}, 'done', 'replay ends with done';
is_deeply [map { $_->{seq} } @full], [1 .. scalar @full], 'seq 1..n contiguous';
ok !(grep { $_->{run_id} ne $rid || $_->{session_id} ne 'r-one' || $_->{schema_version} ne '2.0'
           || !$_->{timestamp} } @full), 'common fields on every event';
is join('', map { $_->{text} } grep { $_->{type} eq 'delta' } @full), $rec->{content},
    'delta texts add up to the content';
ok !(grep { $_->{type} eq 'error' } @full), 'no error event';
is $full[-1]{model_id}, 'echo-1', 'done.model_id';
is $full[-1]{tool_steps}, 0, 'done.tool_steps';

# replay from a middle cursor
my $k = int(@full / 2);
my $mid = events($rid, $k);
is_deeply $mid->{events}, [@full[$k .. $#full]], "cursor=$k replays events $k..";
is_deeply events($rid, scalar @full)->{events}, [], 'cursor=n: nothing left';
is_deeply events($rid, 1000)->{events}, [], 'cursor past the end: nothing';
is events($rid, -1)->{status}, 400, 'negative cursor rejected';

# the events equal the turn line's events
my @turns = turn_lines('r-one');
is scalar @turns, 1, 'one turn line';
is $turns[0]{run_id}, $rid, 'turn line run_id';
is $turns[0]{status}, 'done', 'turn line status done';
is_deeply $turns[0]{events}, \@full, 'turn line events equal the replay';

# ---- live follow: events read while the run is in flight equal the replay ----
$r = post_run('r-live', '/slow 150 one two three four five six');
is $r->{status}, 202, 'slow run: 202';
my $lid = $r->{json}{run_id};
my $first_at;
my $live = events($lid, 0, stop_if => sub { $first_at //= time; 0 });
my $live_end = time;
is $live->{status}, 200, 'live events: 200';
my @live = @{ $live->{events} };
ok @live && $live[-1]{type} eq 'done', 'live stream ends with done';
ok $first_at && $live_end - $first_at > 0.5, 'events arrived while the run was in flight';
$r = get_run($lid);
is $r->{json}{status}, 'done', 'live run done when the stream ended';
my $replay = events($lid, 0);
is_deeply \@live, $replay->{events}, 'live events identical to the replay';
is_deeply [map { $_->{seq} } @live], [1 .. scalar @live], 'live seq contiguous';
is $r->{json}{content}, echo_of('one two three four five six', 0), 'slow run content';

# live follow from a cursor while running
$r = post_run('r-live2', '/slow 120 alpha beta gamma delta epsilon');
my $l2 = $r->{json}{run_id};
SvcTest::wait_for(5, sub { (get_run($l2)->{json}{event_count} // 0) >= 3 });
my $part = events($l2, 2);
my $all = events($l2, 0);
is_deeply $part->{events}, [@{ $all->{events} }[2 .. $#{ $all->{events} }]],
    'live follow from cursor 2 equals the tail of the replay';
is $all->{events}[-1]{type}, 'done', 'ends with done';

# ---- session_busy ----
$r = post_run('r-busy', '/slow 200 a b c d e f g h');
is $r->{status}, 202, 'busy: first run 202';
my $bid = $r->{json}{run_id};
my $b2 = post_run('r-busy', 'second');
is $b2->{status}, 409, 'second run on a running session: 409';
is $b2->{json}{error}{code}, 'session_busy', 'session_busy';
is $b2->{json}{error}{type}, 'conflict_error', 'conflict_error';
is $b2->{headers}{'retry-after'}, '1', 'Retry-After: 1';
my $b3 = $s->req(POST => '/api/chat', body => { session_id => 'r-busy',
                                                messages => [{ role => 'user', content => 'sync' }] });
is $b3->{status}, 409, 'sync chat on a running session: 409';
is $b3->{json}{error}{code}, 'session_busy', 'sync: session_busy';
ok defined $b3->{headers}{'retry-after'}, 'sync: Retry-After';
# reads never wait for a run
my $t0 = time;
is $s->req(GET => '/api/v1/chat/sessions/r-busy')->{status}, 200, 'session readable during the run';
is $s->req(GET => '/api/v1/chat/sessions/r-busy/messages')->{status}, 200, 'messages readable during the run';
ok time - $t0 < 1, 'reads did not wait for the run';
is session('r-busy')->{status}, 'running', 'session status running during the run';
is session('r-busy')->{current_run}{run_id}, $bid, 'current_run names the run';
my ($lb) = grep { $_->{session_id} eq 'r-busy' }
    @{ $s->req(GET => '/api/v1/chat/sessions?limit=500')->{json}{sessions} || [] };
is $lb && $lb->{status}, 'running', 'session list shows running during the run';
is wait_run($bid)->{json}{status}, 'done', 'busy: first run still done';
is scalar(turn_lines('r-busy')), 1, 'the refused run left no turn';

# ---- cancel mid-run ----
$r = post_run('r-cancel', '/slow 200 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12');
is $r->{status}, 202, 'cancel: run 202';
my $cid = $r->{json}{run_id};
SvcTest::wait_for(5, sub { (get_run($cid)->{json}{event_count} // 0) >= 3 });
$r = $s->req(POST => "/api/chat/runs/$cid/cancel");
is $r->{status}, 200, 'cancel: 200';
is_deeply $r->{json}, { cancelled => JSON::PP::true, run_id => $cid }, 'cancel body';
$r = wait_run($cid, 10);
is $r->{json}{status}, 'cancelled', 'cancelled run: status cancelled';
is $r->{json}{error}{code}, 'cancelled', 'record error.code cancelled';
ok $r->{json}{finished_at}, 'cancelled run has finished_at';
my @cev = @{ events($cid, 0)->{events} };
is $cev[-1]{type}, 'error', 'events end with error';
is $cev[-1]{code}, 'cancelled', 'error event code cancelled';
is scalar(grep { $_->{type} eq 'error' || $_->{type} eq 'done' } @cev), 1,
    'exactly one final event';
is_deeply [map { $_->{seq} } @cev], [1 .. scalar @cev], 'cancelled run: seq contiguous';
is $r->{json}{event_count}, scalar @cev, 'event_count matches';
ok wait_session_status('r-cancel', 'cancelled', 5), 'session status cancelled';
my $sc = session('r-cancel');
is $sc->{last_error}{code}, 'cancelled', 'session last_error.code cancelled';
is $sc->{last_error}{run_id}, $cid, 'last_error.run_id';
ok !defined $sc->{current_run}, 'current_run null';
my ($listed) = grep { $_->{session_id} eq 'r-cancel' }
    @{ $s->req(GET => '/api/v1/chat/sessions?limit=500')->{json}{sessions} || [] };
is $listed && $listed->{status}, 'cancelled', 'session list shows the cancelled status';
my @lc = map { $_->{session_id} } @{ $s->req(GET => '/api/v1/chat/sessions?status=cancelled&limit=500')->{json}{sessions} || [] };
ok((grep { $_ eq 'r-cancel' } @lc), 'status=cancelled filter lists the session');
@turns = turn_lines('r-cancel');
is scalar @turns, 1, 'one turn line';
is $turns[0]{status}, 'cancelled', 'turn line status cancelled';
is $turns[0]{run_id}, $cid, 'turn line run_id';
is_deeply $turns[0]{events}, \@cev, 'cancelled turn line events equal the replay';
is $turns[0]{error}{code}, 'cancelled', 'turn line error.code cancelled';
my @mf = message_files('r-cancel');
my @msgs = map { read_json_file($_) } @mf;
ok !(grep { !defined } @msgs), 'every message file parses';
is scalar @msgs, 1, 'only the user message is stored';
ok !(grep { $_->{message}{role} eq 'assistant' } @msgs), 'no assistant message of the cancelled run';
is $sc->{message_count}, scalar @msgs, 'message_count true to the files';
$r = $s->req(POST => "/api/chat/runs/$cid/cancel");
is $r->{status}, 409, 'cancel again: 409';
is $r->{json}{error}{code}, 'run_not_active', 'run_not_active';

# the next run on that session succeeds
$r = post_run('r-cancel', 'after cancel');
is $r->{status}, 202, 'next run after cancel: 202';
my $nid = $r->{json}{run_id};
$r = wait_run($nid);
is $r->{json}{status}, 'done', 'next run done';
like $r->{json}{content}, qr/^Echo: after cancel/, 'next run content';
$sc = session('r-cancel');
is $sc->{status}, 'idle', 'session idle again';
ok !defined $sc->{last_error}, 'last_error cleared';
@msgs = map { read_json_file($_) } message_files('r-cancel');
ok !(grep { !defined } @msgs), 'every message file parses after the next run';
is scalar(grep { $_->{message}{role} eq 'assistant' } @msgs), 1, 'one assistant message (the new run)';
@turns = turn_lines('r-cancel');
is_deeply [map { $_->{status} } @turns], ['cancelled', 'done'], 'turn lines: cancelled, done';
is $s->req(POST => "/api/chat/runs/$nid/cancel")->{json}{error}{code}, 'run_not_active',
    'cancel of a done run: run_not_active';

# cancel while a reader follows the run live: the reader sees the error event and the end
$r = post_run('r-cancel-live', '/slow 150 p1 p2 p3 p4 p5 p6 p7 p8 p9 p10 p11 p12 p13 p14');
my $clid = $r->{json}{run_id};
my $sent;
my $fl = events($clid, 0, stop_if => sub {
    my ($ev) = @_;
    if (!$sent && grep { ref && $_->{type} eq 'delta' } @$ev) {
        $sent = $s->req(POST => "/api/chat/runs/$clid/cancel")->{status};
    }
    return 0;
});
is $sent, 200, 'cancel sent while following';
my @fl = @{ $fl->{events} };
is $fl[-1]{type}, 'error', 'live reader: stream ends with the error event';
is $fl[-1]{code}, 'cancelled', 'live reader: code cancelled';
is_deeply \@fl, events($clid, 0)->{events}, 'live reader saw the same events as the replay';
is get_run($clid)->{json}{status}, 'cancelled', 'followed run: cancelled';

# cancel right after the 202, before the runner got far
$r = post_run('r-cancel-now', '/slow 200 too late for this');
my $cnid = $r->{json}{run_id};
is $s->req(POST => "/api/chat/runs/$cnid/cancel")->{status}, 200, 'immediate cancel: 200';
$r = wait_run($cnid, 10);
is $r->{json}{status}, 'cancelled', 'immediate cancel: cancelled';
my @ce = @{ events($cnid, 0)->{events} };
is scalar(grep { $_->{type} eq 'error' || $_->{type} eq 'done' } @ce), 1, 'immediate cancel: one final event';
is $ce[-1]{code}, 'cancelled', 'immediate cancel: error code cancelled';
ok wait_session_status('r-cancel-now', 'cancelled', 5), 'immediate cancel: session cancelled';

# the event stream pings while the run is silent
$r = post_run('r-ping', '/slow 2500 x y');
my $pid_ = $r->{json}{run_id};
my $pe = events($pid_, 0, stop_if => sub { grep { $_ eq 'ping' } @{ $_[1] } });
ok((grep { $_ eq 'ping' } @{ $pe->{comments} }), 'events: ": ping" while the run is silent');
$s->req(POST => "/api/chat/runs/$pid_/cancel");
is wait_run($pid_, 10)->{json}{status}, 'cancelled', 'silent run cancelled';

# several runs at once on different sessions: each completes with its own events
my %par;
for my $i (1 .. 5) {
    my $x = post_run("r-par-$i", "/slow 50 parallel run $i");
    $par{$i} = $x->{json}{run_id} if $x->{status} == 202;
}
is scalar(keys %par), 5, 'five concurrent runs accepted';
for my $i (sort keys %par) {
    my $x = wait_run($par{$i});
    is $x->{json}{content}, echo_of("parallel run $i", 0), "parallel run $i: content";
    my @pe = @{ events($par{$i}, 0)->{events} };
    ok !(grep { $_->{run_id} ne $par{$i} || $_->{session_id} ne "r-par-$i" } @pe),
        "parallel run $i: only its own events";
    is_deeply [map { $_->{seq} } @pe], [1 .. scalar @pe], "parallel run $i: seq contiguous";
}

# a run with a tool call: tool_start and tool_result events, and the answer after it
$r = post_run('r-tool', '/tool clock {}');
my $tid = $r->{json}{run_id};
$r = wait_run($tid);
is $r->{json}{status}, 'done', 'tool run: done';
like $r->{json}{content}, qr/^Tool clock returned: \d{4}-/, 'tool run: content';
my @te = @{ events($tid, 0)->{events} };
my ($ts) = grep { $_->{type} eq 'tool_start' } @te;
my ($tr) = grep { $_->{type} eq 'tool_result' } @te;
ok $ts && $ts->{tool} eq 'clock', 'tool run: tool_start event';
ok $tr && $tr->{call_id} eq $ts->{call_id} && $tr->{ok}, 'tool run: tool_result event for the same call';
is $te[-1]{type}, 'done', 'tool run: ends with done';
is $te[-1]{tool_steps}, 1, 'tool run: done.tool_steps 1';
is_deeply [map { $_->{seq} } @te], [1 .. scalar @te], 'tool run: seq contiguous';

# an archived session refuses a run at once, and no run is recorded
is $s->req(POST => '/api/v1/chat/sessions/r-one/archive')->{status}, 200, 'archive r-one';
opendir my $rdh, $s->root . '/.svc_runs' or die;
my $nrec = grep { /^run-.*\.json$/ } readdir $rdh;
closedir $rdh;
$r = post_run('r-one', 'while archived');
is $r->{status}, 403, 'run on an archived session: 403';
is $r->{json}{error}{code}, 'session_archived', 'session_archived';
opendir $rdh, $s->root . '/.svc_runs' or die;
is scalar(grep { /^run-.*\.json$/ } readdir $rdh), $nrec, 'no run record for the refused run';
closedir $rdh;
is session('r-one')->{run_count}, 1, 'run_count unchanged';
$s->req(POST => '/api/v1/chat/sessions/r-one/unarchive');

# ---- unknown and invalid run ids ----
for my $id ('run-0000000000000000', 'nope') {
    for my $m (['GET', "/api/chat/runs/$id"], ['GET', "/api/chat/runs/$id/events"],
               ['POST', "/api/chat/runs/$id/cancel"]) {
        $r = $s->req($m->[0] => $m->[1]);
        is $r->{status}, 404, "$m->[0] $m->[1]: 404";
        is $r->{json}{error}{code}, 'run_not_found', "$m->[0] $m->[1]: run_not_found";
    }
}
# path escapes and names of other files in the runs directory: 404, no file served
for my $id ('..', '%2e%2e', '.', '%2E%2E%2F..', '..%2F..%2Fagents.yaml', '.svc_runs',
            '..%2Fsession_r-one%2Fsvc_session', "$rid.events", "$rid%2F..%2F$rid") {
    for my $m (['GET', "/api/chat/runs/$id"], ['GET', "/api/chat/runs/$id/events"],
               ['POST', "/api/chat/runs/$id/cancel"]) {
        $r = $s->req($m->[0] => $m->[1]);
        is $r->{status}, 404, "$m->[0] $m->[1]: 404";
        unlike $r->{body} // '', qr/"status"\s*:\s*"(?:done|running|idle)"|schema_version|session_type|fsync/,
            "$m->[0] $m->[1]: no file served";
    }
}

# methods
$r = $s->req(GET => '/api/chat/runs');
is $r->{status}, 405, 'GET /api/chat/runs: 405';
like $r->{headers}{allow} // '', qr/POST/, 'Allow: POST';
$r = $s->req(POST => "/api/chat/runs/$rid");
is $r->{status}, 405, 'POST /api/chat/runs/{id}: 405';
like $r->{headers}{allow} // '', qr/GET/, 'Allow: GET';
$r = $s->req(GET => "/api/chat/runs/$rid/cancel");
is $r->{status}, 405, 'GET .../cancel: 405';

# ---- a run nobody reads still finishes ----
$r = post_run('r-alone', '/slow 100 left alone here');
my $aid = $r->{json}{run_id};
ok wait_session_status('r-alone', 'idle', 10), 'unread run: session idle in the end';
$sc = session('r-alone');
is $sc->{last_run_id}, $aid, 'last_run_id is the unread run';
is $sc->{turn_count}, 1, 'turn recorded';
is get_run($aid)->{json}{status}, 'done', 'unread run: done';
my ($la) = grep { $_->{session_id} eq 'r-alone' }
    @{ $s->req(GET => '/api/v1/chat/sessions?limit=500')->{json}{sessions} || [] };
is $la && $la->{status}, 'idle', 'session list: idle after the unread run';
is $la && $la->{message_count}, 2, 'session list: message_count 2';
is get_run($aid)->{json}{content}, echo_of('left alone here', 0), 'unread run: content';

# a new random session when none is given
$r = post_run(undef, 'no session');
like $r->{json}{session_id} // '', qr/^sess-[0-9a-f]{16}$/, 'runs: new random session id';
is wait_run($r->{json}{run_id})->{json}{status}, 'done', 'random-session run done';

# bad bodies are answered at once, no run
$r = $s->req(POST => '/api/chat/runs', body => '{nope');
is $r->{status}, 400, 'invalid json: 400';
$r = $s->req(POST => '/api/chat/runs', body => { session_id => '../x', messages => [{ role => 'user', content => 'x' }] });
is $r->{status}, 400, 'invalid session id: 400';
is $r->{json}{error}{code}, 'invalid_session_id', 'invalid_session_id';
ok !-e $s->root . '/x', 'nothing written outside the root';

$s->stop;
done_testing;
