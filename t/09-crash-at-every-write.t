#!/usr/bin/perl
# SPEC 3's crash order: a turn killed at any of its writes leaves a session that says what
# happened. The process is stopped (the test hook of core/fsio.h, then SIGKILL through
# strace's fault injection) before each file a turn writes becomes visible, in turn; the
# session is then read back through `svc sessions show` and `svc sessions list`:
#   - cut before the `running` sidecar: nothing of the turn is stored (a new session does
#     not exist yet);
#   - cut after it, before the turn line: status error, last_error interrupted, a turn
#     line with error.code interrupted, message_count true to the files;
#   - cut after the turn line (the run's commit record): the run is complete, status idle.
# Never an idle session with a stored input and no record of the run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

die "t/09: build/svc lacks the test hook: build with `make TEST_HOOKS=1` (make test does)\n"
    unless test_hooks_built();

sub turns_of {
    my ($h, $sid) = @_;
    my $t = slurp(native_dir($h, $sid) . '/svc_turns.jsonl') // '';
    return map { jdecode($_) } grep { length } split /\n/, $t;
}

sub listed {
    my ($h, $sid) = @_;
    my $l = jdecode(svc($h, 'sessions', 'list')->{out});
    my ($s) = grep { $_->{session_id} eq $sid } @{ $l->{sessions} };
    return $s;
}

# The writes of a second turn (echo model) on a session with one turn, in order.
my @existing = ('svc_session.json#1', 'message_2.json', 'message_3.json', 'agent.json',
    'svc_turns.jsonl', 'svc_session.json#2');
# The writes of a first turn.
my @first = ('svc_session.json#1', '/session.json', 'agent.json#1', 'message_0.json',
    'message_1.json', 'agent.json#2', 'svc_turns.jsonl', 'svc_session.json#2');

for my $fsync (0, 1) {
    for my $i (0 .. $#existing) {
        my $at = $existing[$i];
        my $name = "existing session, fsync $fsync, cut before $at";
        my $h = new_home(fsync => $fsync);
        my $sid = 'c' . $i;
        is(svc($h, 'chat', $sid, 'one')->{rc}, 0, "$name: first turn");
        my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => $at }, 'chat', $sid, 'two');
        is($r->{rc}, 77, "$name: the process died at the write");
        my @ids = msg_ids($h, $sid);
        $r = svc($h, 'sessions', 'show', $sid);
        is($r->{rc}, 0, "$name: show") or diag $r->{err};
        my $sc = jdecode($r->{out});
        my @t = turns_of($h, $sid);
        if ($i == 0) {
            is_deeply(\@ids, [0, 1], "$name: nothing of the turn stored");
            is($sc->{status}, 'idle', "$name: status idle (the turn never began on disk)");
            is(scalar @t, 1, "$name: one turn line");
        } elsif ($i < $#existing) {
            is($sc->{status}, 'error', "$name: status error");
            is($sc->{last_error}{code}, 'interrupted', "$name: last_error interrupted");
            is(scalar @t, 2, "$name: a turn line for the cut run");
            is($t[1]{error}{code}, 'interrupted', "$name: its error.code interrupted");
            is($t[1]{run_id}, $sc->{last_run_id}, "$name: it names the cut run");
        } else {
            is($sc->{status}, 'idle', "$name: the committed run is complete: idle");
            ok(!defined $sc->{last_error}, "$name: no error");
            is(scalar @t, 2, "$name: two turn lines");
            is($t[1]{status}, 'done', "$name: the second is done");
            is($sc->{turn_count}, 2, "$name: turn_count 2");
        }
        is($sc->{message_count}, scalar @ids, "$name: message_count true to the files");
        is(listed($h, $sid)->{status}, $sc->{status}, "$name: the listing agrees");
        $r = svc($h, 'chat', $sid, 'three');
        is($r->{rc}, 0, "$name: the session takes the next turn") or diag $r->{err};
        $sc = json_file(sidecar_path($h, $sid));
        is($sc->{status}, 'idle', "$name: idle after it");
        is($sc->{message_count}, scalar(msg_ids($h, $sid)), "$name: counts agree after it");
    }
}

for my $i (0 .. $#first) {
    my $at = $first[$i];
    my $name = "new session, cut before $at";
    my $h = new_home();
    my $sid = 'n' . $i;
    my $r = svc($h, { SVC_TEST_CRASH_BEFORE_RENAME => $at }, 'chat', $sid, 'one');
    is($r->{rc}, 77, "$name: the process died at the write");
    $r = svc($h, 'sessions', 'show', $sid);
    if ($i == 0) {
        is($r->{rc}, 1, "$name: no session");
        like($r->{err}, qr/session_not_found/, "$name: session_not_found");
        ok(!listed($h, $sid), "$name: not listed");
    } elsif ($i < $#first) {
        is($r->{rc}, 0, "$name: show") or diag $r->{err};
        my $sc = jdecode($r->{out});
        is($sc->{status}, 'error', "$name: status error");
        is($sc->{last_error}{code}, 'interrupted', "$name: interrupted");
        is($sc->{message_count}, scalar(my @x = msg_ids($h, $sid)), "$name: message_count");
        is(listed($h, $sid)->{status}, 'error', "$name: listed as error");
    } else {
        my $sc = jdecode($r->{out});
        is($sc->{status}, 'idle', "$name: the committed run is complete");
        is($sc->{turn_count}, 1, "$name: turn_count 1");
    }
    $r = svc($h, 'chat', $sid, 'two');
    is($r->{rc}, 0, "$name: the session takes the next turn") or diag $r->{err};
}

# The same with a real SIGKILL at each rename (strace's fault injection), no hook involved.
SKIP: {
    skip 'strace not installed', 1 unless system('strace -V >/dev/null 2>&1') == 0;
    my $n = 0;
    for my $when (1 .. 12) {
        my $h = new_home();
        my $sid = 'k';
        is(svc($h, 'chat', $sid, 'one')->{rc}, 0, "kill at rename $when: first turn");
        my $st;
        {
            local $ENV{SVC_HOME} = $h->{home};
            local $ENV{SVC_TEST_CRASH_BEFORE_RENAME};
            delete local $ENV{SVC_CONFIG};
            # LeakSanitizer cannot run under ptrace (make asan)
            local $ENV{ASAN_OPTIONS} = join ':', grep { length } $ENV{ASAN_OPTIONS} // '',
                'detect_leaks=0';
            $st = system('strace', '-f', '-o', '/dev/null', '-e',
                'trace=rename,renameat,renameat2', '-e',
                "inject=rename,renameat,renameat2:signal=KILL:when=$when", svc_bin(), 'chat', $sid,
                'two');
        }
        last if $st == 0; # past the turn's last rename
        $n++;
        my $sc = jdecode(svc($h, 'sessions', 'show', $sid)->{out});
        my @ids = msg_ids($h, $sid);
        my @t = turns_of($h, $sid);
        is($sc->{message_count}, scalar @ids, "kill at rename $when: message_count true");
        if ($sc->{status} eq 'idle') {
            # either the turn never began on disk or it was committed
            ok(@ids == 2 && @t == 1 || @ids == 4 && @t == 2 && $t[1]{status} eq 'done',
                "kill at rename $when: idle only when untouched or complete");
        } else {
            is($sc->{status}, 'error', "kill at rename $when: status error");
            is($sc->{last_error}{code}, 'interrupted', "kill at rename $when: interrupted");
        }
    }
    ok($n >= 4, "strace killed the turn at $n renames");
}

done_testing();
