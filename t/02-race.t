#!/usr/bin/perl
# Concurrency and crash safety (SPEC 2.3, 3): two runs racing on one session, a process
# killed between the temp write and the rename, and the repair of a stale `running`.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);
use SvcCliTest;

sub wait_status {
    my ($h, $sid, $want, $timeout) = @_;
    my $t0 = time;
    while (time - $t0 < $timeout) {
        my $sc = eval { json_file(sidecar_path($h, $sid)) };
        return 1 if $sc && ($sc->{status} // '') eq $want;
        sleep 0.02;
    }
    return 0;
}

sub turns_of {
    my ($h, $sid) = @_;
    my $t = slurp(native_dir($h, $sid) . '/svc_turns.jsonl') // '';
    return map { jdecode($_) } grep { length } split /\n/, $t;
}

# ---- a slow run holds the run lock; a second run fails at once with session_busy ----
{
    my $h = new_home();
    my $sid = 'race';
    my $slow = svc_bg($h, 'chat', $sid, '/slow 300 hello');
    ok(wait_status($h, $sid, 'running', 5), 'the slow run is running');
    my $t0 = time;
    my $r = svc($h, 'chat', $sid, 'intruder');
    my $dt = time - $t0;
    is($r->{rc}, 1, 'second run exits 1');
    like($r->{err}, qr/session_busy/, 'stderr says session_busy');
    like($r->{err}, qr/\A[^\n]*\n\z/, 'the error is a single stderr line');
    is($r->{out}, '', 'nothing on stdout');
    cmp_ok($dt, '<', 1.0, 'the busy answer comes at once (does not wait for the run)');

    # reads never wait for a run, and a live run is not "repaired"
    $t0 = time;
    $r = svc($h, 'sessions', 'show', $sid);
    is($r->{rc}, 0, 'show during the run works');
    cmp_ok(time - $t0, '<', 1.0, 'show does not wait for the run');
    is(jdecode($r->{out})->{status}, 'running', 'a live run shows status running');
    unlike($r->{err}, qr/repair/, 'a live run is not repaired');

    my $s = svc_wait($slow);
    is($s->{rc}, 0, 'the slow run succeeds') or diag($s->{err});
    like($s->{out}, qr/Echo: hello \(I was given 0 earlier messages\.\)/, 'slow run answer');
    is_deeply([msg_ids($h, $sid)], [0, 1], 'message ids 0..1: the refused run stored nothing');
    my $sc = json_file(sidecar_path($h, $sid));
    is($sc->{run_count}, 1, 'run_count 1');
    is($sc->{message_count}, 2, 'message_count 2');
    is($sc->{status}, 'idle', 'status idle');
    my @t = turns_of($h, $sid);
    is(scalar @t, 1, 'one turn line');
}

# ---- rounds of two concurrent fast runs: ids stay 0..n-1 ----
{
    my $h = new_home();
    my $sid = 'race2';
    my ($ok, $busy, $other) = (0, 0, 0);
    for my $round (1 .. 10) {
        my @b = map { svc_bg($h, 'chat', $sid, "round $round $_") } qw(a b);
        for my $b (@b) {
            my $r = svc_wait($b);
            if ($r->{rc} == 0) { $ok++ }
            elsif ($r->{rc} == 1 && $r->{err} =~ /session_busy/) { $busy++ }
            else { $other++; diag("unexpected: rc $r->{rc} $r->{err}") }
        }
    }
    is($other, 0, 'every run either succeeded or was busy');
    cmp_ok($ok, '>=', 10, "at least one run per round succeeded ($ok ok, $busy busy)");
    my @ids = msg_ids($h, $sid);
    is_deeply(\@ids, [0 .. 2 * $ok - 1], 'message ids are 0..n-1 with no gap or duplicate');
    my $bad = 0;
    for my $id (@ids) {
        my $m = json_file(msg_dir($h, $sid) . "/message_$id.json");
        $bad++ unless $m->{message_id} == $id && $m->{message}{role} eq ($id % 2 ? 'assistant' : 'user');
    }
    is($bad, 0, 'messages alternate user/assistant and carry their own ids');
    my $sc = json_file(sidecar_path($h, $sid));
    is($sc->{run_count}, $ok, 'run_count counts the successful runs only');
    is($sc->{turn_count}, $ok, 'turn_count');
    is($sc->{message_count}, 2 * $ok, 'message_count');
    my @t = turns_of($h, $sid);
    is(scalar @t, $ok, 'one turn line per successful run');
    my %seen;
    $seen{$_->{input_message_id}}++ for @t;
    is_deeply([sort { $a <=> $b } keys %seen], [map { 2 * $_ } 0 .. $ok - 1], 'turn lines name distinct inputs');
}

# ---- a crash between the temp write and the rename leaves the previous file whole ----
{
    my $h = new_home();
    my $sid = 'crash1';
    is(svc($h, 'chat', $sid, 'one')->{rc}, 0, 'first turn');
    my $p = sidecar_path($h, $sid);
    my $before = slurp($p);
    my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => 'svc_session.json' }, 'chat', $sid, 'two');
    is($r->{rc}, 77, 'the process died at the hook (exit 77)');
    is(slurp($p), $before, 'svc_session.json unchanged');
    ok(eval { json_file($p); 1 }, 'svc_session.json still parses');
    opendir(my $d, native_dir($h, $sid));
    my @tmp = grep { /^\.?svc_session\.json\.tmp-/ } readdir $d;
    is(scalar @tmp, 1, 'the temp file was written (the hook fired after it)');
    # SPEC 3: the `running` sidecar is the run's first write, so nothing of it was stored
    is_deeply([msg_ids($h, $sid)], [0, 1], 'no native file written before the sidecar');
    $r = svc($h, 'chat', $sid, 'three');
    is($r->{rc}, 0, 'a following run works') or diag($r->{err});
    is_deeply([msg_ids($h, $sid)], [0 .. 3], 'ids continue');
    like($r->{out}, qr/I was given 2 earlier messages/, 'the cut run left no input behind');
    my $sc = json_file($p);
    is($sc->{status}, 'idle', 'status idle');
    is($sc->{message_count}, 4, 'message_count true to the files');
    $r = svc($h, 'sessions', 'messages', $sid);
    is(jdecode($r->{out})->{total}, 4, 'the temp file is not counted as a message');
}
{
    my $h = new_home();
    my $sid = 'crash2';
    is(svc($h, 'chat', $sid, 'one')->{rc}, 0, 'first turn');
    my $ap = native_dir($h, $sid) . '/agents/agent_svc-agent/agent.json';
    my $before = slurp($ap);
    my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => 'agent.json' }, 'chat', $sid, 'two');
    is($r->{rc}, 77, 'died at the agent.json rename (exit 77)');
    is(slurp($ap), $before, 'agent.json unchanged');
    ok(eval { json_file($ap); 1 }, 'agent.json still parses');
    my $sc = json_file(sidecar_path($h, $sid));
    is($sc->{status}, 'running', 'the sidecar was left running by the dead run');
    my $dead_run = $sc->{current_run}{run_id};
    $r = svc($h, 'chat', $sid, 'three');
    is($r->{rc}, 0, 'the next run works') or diag($r->{err});
    like($r->{err}, qr/repair\S* stale run \Q$dead_run\E.*\Q$sid\E/, 'the repair of the stale run is logged');
    my @t = turns_of($h, $sid);
    is(scalar @t, 3, 'three turn lines: done, interrupted, done');
    is($t[1]{status}, 'error', 'the interrupted run has a turn line with status error');
    is($t[1]{error}{code}, 'interrupted', 'error.code interrupted');
    is($t[1]{run_id}, $dead_run, 'the turn line names the dead run');
    is($t[2]{status}, 'done', 'the new run is done');
    $sc = json_file(sidecar_path($h, $sid));
    is($sc->{status}, 'idle', 'idle after the successful run');
    ok(!defined $sc->{last_error}, 'last_error cleared by the successful run');
    is($sc->{message_count}, 6, 'message_count 6');
    is_deeply([msg_ids($h, $sid)], [0 .. 5], 'ids 0..5');
}
{
    my $h = new_home();
    my $sid = 'crash3';
    is(svc($h, 'chat', $sid, 'one')->{rc}, 0, 'first turn');
    my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => 'message_2.json' }, 'chat', $sid, 'two');
    is($r->{rc}, 77, 'died before renaming message_2.json');
    is_deeply([msg_ids($h, $sid)], [0, 1], 'no message_2.json');
    $r = svc($h, 'chat', $sid, 'three');
    is($r->{rc}, 0, 'next run ok') or diag($r->{err});
    like($r->{out}, qr/I was given 2 earlier messages/, 'the temp message file is not restored');
    is_deeply([msg_ids($h, $sid)], [0 .. 3], 'ids 0..3');
    $r = svc($h, 'sessions', 'list');
    unlike($r->{out}, qr/\.tmp-/, 'temp files never listed');
}

# ---- a stale `running` is repaired on read and logged ----
{
    my $h = new_home();
    my $sid = 'stale';
    is(svc($h, 'chat', $sid, 'one')->{rc}, 0, 'first turn');
    my $p = sidecar_path($h, $sid);
    py(<<'PY', $p);
import json, sys
p = sys.argv[1]
d = json.loads(open(p).read())
d['status'] = 'running'
d['current_run'] = {'run_id': 'run-dead00000000beef', 'pid': 999999, 'started_at': '2026-01-01T00:00:00.000000+00:00'}
d['message_count'] = 99
open(p, 'w').write(json.dumps(d, indent=2, ensure_ascii=False) + '\n')
PY
    my $r = svc($h, 'sessions', 'show', $sid);
    is($r->{rc}, 0, 'show exits 0') or diag($r->{err});
    my $s = jdecode($r->{out});
    is($s->{status}, 'error', 'status error');
    is($s->{last_error}{code}, 'interrupted', 'last_error.code interrupted');
    is($s->{last_error}{run_id}, 'run-dead00000000beef', 'last_error.run_id is the dead run');
    like($s->{last_error}{at} // '', TS_RE, 'last_error.at');
    ok(!defined $s->{current_run}, 'current_run null');
    is($s->{message_count}, 2, 'message_count recounted from the files');
    like($r->{err}, qr/repair.*run-dead00000000beef.*\Q$sid\E/, 'the repair is logged on stderr');
    my $sc = json_file($p);
    is($sc->{status}, 'error', 'repair written to svc_session.json');
    is($sc->{message_count}, 2, 'recount written');
    my @t = turns_of($h, $sid);
    is(scalar @t, 2, 'a turn line was appended');
    is($t[-1]{status}, 'error', 'turn status error');
    is($t[-1]{error}{code}, 'interrupted', 'turn error.code interrupted');
    is($t[-1]{run_id}, 'run-dead00000000beef', 'turn run_id');
    is($t[-1]{created_at}, '2026-01-01T00:00:00.000000+00:00', 'turn created_at is the run start');

    $r = svc($h, 'sessions', 'show', $sid);
    is($r->{err}, '', 'a second read repairs nothing');
    is(scalar(my @t2 = turns_of($h, $sid)), 2, 'no second turn line');

    $r = svc($h, 'chat', $sid, 'two');
    is($r->{rc}, 0, 'the session stays usable');
    $sc = json_file($p);
    is($sc->{status}, 'idle', 'idle again');
    ok(!defined $sc->{last_error}, 'last_error cleared');
}

# ---- stale repair through `sessions messages` and through the listing's --status ----
{
    my $h = new_home();
    my $sid = 'stale2';
    is(svc($h, 'chat', $sid, 'one')->{rc}, 0, 'first turn');
    my $p = sidecar_path($h, $sid);
    my $d = slurp($p);
    $d =~ s/"status": "idle"/"status": "running"/ or die;
    spit($p, $d);
    my $r = svc($h, 'sessions', 'messages', $sid);
    is($r->{rc}, 0, 'messages ok');
    like($r->{err}, qr/repair/, 'messages repairs and logs');
    is(json_file($p)->{status}, 'error', 'repaired by the messages query');
    $r = svc($h, 'sessions', 'list', '--status', 'error');
    is_deeply([map { $_->{session_id} } @{ jdecode($r->{out})->{sessions} }], [$sid],
        'listing sees the repaired status');
}

done_testing();
