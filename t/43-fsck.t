#!/usr/bin/perl
# svc fsck (SPEC 7): each kind of damage is seeded into a real root, reported with its file
# (and byte offset for lines), repaired where that loses nothing, and never a message file
# touched; exit codes 0 clean / 1 problems left / 2 usage; --session, --json; a session
# with a live run (its run lock held) is left to its run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256_hex);
use Fcntl qw(:flock);
use SvcCliTest;

my $h = new_home();
my $root = $h->{root};
for my $sid (qw(dmg ids gap range bad live)) {
    is(svc($h, 'chat', $sid, "first $sid")->{rc}, 0, "turn 1 on $sid");
    is(svc($h, 'chat', $sid, "second $sid")->{rc}, 0, "turn 2 on $sid");
}
is(svc($h, 'sessions', 'list')->{rc}, 0, 'a listing builds the index');

sub fsck { my $r = svc($h, 'fsck', @_); $r->{json} = eval { jdecode($r->{out}) } if grep { $_ eq '--json' } @_; $r }
sub kinds { my ($rep) = @_; [sort map { "$_->{kind} $_->{file}" } @{ $rep->{problems} }] }
sub find_p { my ($rep, $kind, $file) = @_; (grep { $_->{kind} eq $kind && $_->{file} eq $file } @{ $rep->{problems} })[0] }

# ---- clean ----
my $r = fsck();
is($r->{rc}, 0, 'a clean root: exit 0');
like($r->{out}, qr/6 sessions checked, 0 problems/, 'counts at the end');
$r = fsck('--json');
is($r->{json}{counts}{problems}, 0, '--json: no problems');
is($r->{json}{sessions_checked}, 6, '--json: six sessions');

# ---- usage ----
is(fsck('--bogus')->{rc}, 2, 'unknown option: exit 2');
is(fsck('--session')->{rc}, 2, '--session without an id: exit 2');
is(fsck('--session', '../x')->{rc}, 2, 'an invalid session id: exit 2');
$r = fsck('--session', 'nosuch');
is($r->{rc}, 1, 'an unknown session: exit 1');
like($r->{err}, qr/session_not_found/, 'said so');

# ---- seed damage ----
my $d = "$root/session_dmg";
my $sc = json_file("$d/svc_session.json");
$sc->{message_count} = 99;
$sc->{status} = 'running';
$sc->{current_run} = { run_id => 'run-gone', pid => 999999, started_at => $sc->{updated_at} };
spit("$d/svc_session.json", jencode($sc));
my $turns = slurp("$d/svc_turns.jsonl");
my @tl = split /(?<=\n)/, $turns;
my $bad_at = length $tl[0];
spit("$d/svc_turns.jsonl", $tl[0] . "garbage line\n" . join('', @tl[1 .. $#tl]) . '{"schema_version":1,"tur');
my $torn_at = length($turns) + length("garbage line\n");
spit("$d/svc_session.json.tmp-123-deadbeef", 'old temp');
utime time - 600, time - 600, "$d/svc_session.json.tmp-123-deadbeef";
spit("$d/session.json.tmp-$$-cafe", 'a writer at work');    # young, its writer (us) alive
my $dead = fork // die;    # a pid that is gone: a young temp file of a killed writer
if ($dead == 0) { POSIX::_exit(0) }
waitpid $dead, 0;
spit("$d/agent.json.tmp-$dead-f00d", 'a killed writer');
spit("$d/notes.txt", 'somebody else');
# spares (core/fsio.h SVC_WRITE_SPARE) are kept on purpose, however old and whatever they hold
spit("$d/svc_session.json.tmp-spare", 'the version before');
utime time - 600, time - 600, "$d/svc_session.json.tmp-spare";
spit("$d/agents/agent_$h->{agent}/agent.json.tmp-spare", '{"torn');
utime time - 600, time - 600, "$d/agents/agent_$h->{agent}/agent.json.tmp-spare";

my $m1 = msg_dir($h, 'ids') . '/message_1.json';
my $m = json_file($m1);
$m->{message_id} = 7;
spit($m1, jencode($m));
unlink(msg_dir($h, 'gap') . '/message_1.json') or die;
my $agent = native_dir($h, 'range') . "/agents/agent_$h->{agent}/agent.json";
my $a = json_file($agent);
$a->{conversation_manager_state}{removed_message_count} = 50;
spit($agent, jencode($a));
spit(msg_dir($h, 'bad') . '/message_2.json', '{"message": {"role": "user", oops');

# the index: bytes overwritten
my $ix = "$root/.svc_index.jsonl";
open my $fh, '+<', $ix or die;
seek $fh, 50, 0;
print $fh '#####';
close $fh;

# runs: a record left running by a runner that is gone, and a torn event line
mkdir "$root/.svc_runs";
spit("$root/.svc_runs/run-dead.json", jencode({ run_id => 'run-dead', session_id => 'live',
    status => 'running', event_count => 1, model => 'echo-1', created_at => $sc->{updated_at} }));
spit("$root/.svc_runs/run-dead.lock", '');
spit("$root/.svc_runs/run-dead.events.jsonl", qq({"type":"run.started","seq":1}\n{"type":"tok));

# the memory file: a torn last line
my $memf = "$h->{home}/memory/svc-agent/memory.jsonl";
ok(-s $memf, 'memory sync wrote the memory file');
my $mem_at = -s $memf;
open my $mf, '>>', $memf or die;
print $mf '{"session_id":"dmg","mess';
close $mf;

# a live run on 'live': its run lock held, its sidecar says running and its count lags
my $l = json_file(sidecar_path($h, 'live'));
$l->{status} = 'running';
$l->{message_count} = 1;
spit(sidecar_path($h, 'live'), jencode($l));
open my $lk, '>>', native_dir($h, 'live') . '/.svc.run.lock' or die;
flock($lk, LOCK_EX) or die;

my %sum_before = map { $_ => sha256_hex(slurp($_)) } glob("$root/session_*/agents/*/messages/*");

# ---- check only ----
$r = fsck('--json');
is($r->{rc}, 1, 'damage: exit 1');
my $rep = $r->{json};
is_deeply(kinds($rep), [sort
    'bad_line session_dmg/svc_turns.jsonl',
    'bad_message_id session_ids/agents/agent_svc-agent/messages/message_1.json',
    'index .svc_index.jsonl',
    'message_gap session_gap/agents/agent_svc-agent/messages',
    'orphan_temp session_dmg/svc_session.json.tmp-123-deadbeef',
    "orphan_temp session_dmg/agent.json.tmp-$dead-f00d",
    'torn_line memory/svc-agent/memory.jsonl',
    'removed_count_range session_range/agents/agent_svc-agent/agent.json',
    'sidecar_count session_dmg/svc_session.json',
    'sidecar_count session_gap/svc_session.json',
    'stale_run session_dmg/svc_session.json',
    'stale_run_record .svc_runs/run-dead.json',
    'stray_file session_dmg/notes.txt',
    'torn_line .svc_runs/run-dead.events.jsonl',
    'torn_line session_dmg/svc_turns.jsonl',
    'unreadable session_bad/agents/agent_svc-agent/messages/message_2.json',
], 'every seeded problem reported, and nothing else (the live session is left to its run)');
is(find_p($rep, 'bad_line', 'session_dmg/svc_turns.jsonl')->{offset}, $bad_at, 'bad line: byte offset');
is(find_p($rep, 'torn_line', 'session_dmg/svc_turns.jsonl')->{offset}, $torn_at, 'torn line: byte offset');
is(find_p($rep, 'torn_line', 'memory/svc-agent/memory.jsonl')->{offset}, $mem_at, 'memory file: torn line at its offset');
ok(defined find_p($rep, 'unreadable', 'session_bad/agents/agent_svc-agent/messages/message_2.json')->{offset},
   'unreadable file: offset where parsing stops');
is_deeply($rep->{busy}, ['live'], 'the session with a live run is reported busy');
ok(!grep({ $_->{repaired} } @{ $rep->{problems} }), 'nothing repaired without --repair');
is(json_file("$d/svc_session.json")->{status}, 'running', 'check only: the sidecar untouched');
ok(-e "$d/svc_session.json.tmp-123-deadbeef", 'check only: the temp file is still there');

# the human report: file @offset: kind: message
$r = fsck();
like($r->{out}, qr{^session_dmg/svc_turns\.jsonl \@$torn_at: torn_line: }m, 'text report: file @offset: kind');
like($r->{out}, qr/16 problems, 0 repaired, 16 left/, 'text report: counts');

# ---- --session ----
$r = fsck('--json', '--session', 'ids');
is_deeply(kinds($r->{json}), ['bad_message_id session_ids/agents/agent_svc-agent/messages/message_1.json'],
          '--session checks that session only');

# ---- repair ----
$r = fsck('--repair', '--json');
is($r->{rc}, 1, 'repair: problems that cannot be repaired are left: exit 1');
$rep = $r->{json};
my %fixed = map { ("$_->{kind} $_->{file}" => $_->{repaired} ? 1 : 0) } @{ $rep->{problems} };
is_deeply(\%fixed, {
    'bad_line session_dmg/svc_turns.jsonl' => 1,
    'bad_message_id session_ids/agents/agent_svc-agent/messages/message_1.json' => 0,
    'index .svc_index.jsonl' => 1,
    'message_gap session_gap/agents/agent_svc-agent/messages' => 0,
    'orphan_temp session_dmg/svc_session.json.tmp-123-deadbeef' => 1,
    "orphan_temp session_dmg/agent.json.tmp-$dead-f00d" => 1,
    'removed_count_range session_range/agents/agent_svc-agent/agent.json' => 0,
    'sidecar_count session_gap/svc_session.json' => 1,
    'stale_run session_dmg/svc_session.json' => 1,
    'stale_run_record .svc_runs/run-dead.json' => 1,
    'stray_file session_dmg/notes.txt' => 0,
    'torn_line .svc_runs/run-dead.events.jsonl' => 1,
    'torn_line memory/svc-agent/memory.jsonl' => 1,
    'unreadable session_bad/agents/agent_svc-agent/messages/message_2.json' => 0,
}, 'what can be repaired without losing data is, the rest is left');
# (the stale-run repair comes first: it recounts dmg and its turn line puts the torn one on a
# line of its own, so dmg shows two bad lines, both moved aside)
is(scalar(grep { $_->{kind} eq 'bad_line' && $_->{file} eq 'session_dmg/svc_turns.jsonl' && $_->{repaired} }
    @{ $rep->{problems} }), 2, 'both bad turn lines repaired');
is($rep->{counts}{stale_runs_repaired}, 2, 'stale runs repaired counted (session and run record)');

$sc = json_file("$d/svc_session.json");
is($sc->{status}, 'error', 'stale run: status error');
is($sc->{last_error}{code}, 'interrupted', 'stale run: interrupted');
is($sc->{message_count}, scalar(msg_ids($h, 'dmg')), 'sidecar recounted from the files');
is(json_file(sidecar_path($h, 'gap'))->{message_count}, 3, 'gap: counts the files there are');
my $t = slurp("$d/svc_turns.jsonl");
like($t, qr/\n\z/, 'turns: ends with a whole line');
is(scalar(grep { !eval { jdecode($_); 1 } } split /\n/, $t), 0, 'turns: every line decodes');
is(slurp("$d/svc_turns.jsonl.corrupt"), "garbage line\n{\"schema_version\":1,\"tur\n",
   'the bad lines kept in svc_turns.jsonl.corrupt');
ok(!-e "$d/svc_session.json.tmp-123-deadbeef", 'the old temp file removed');
like(slurp("$memf.corrupt"), qr/\A\{"session_id":"dmg","mess\n\z/, 'the torn memory line kept in memory.jsonl.corrupt');
like(slurp($memf), qr/\n\z/, 'the memory file ends with a whole line');
ok(-e "$d/session.json.tmp-$$-cafe", 'a young temp file of a live writer left alone');
ok(!-e "$d/agent.json.tmp-$dead-f00d", 'a young temp file of a writer that is gone removed');
ok(-e "$d/notes.txt", 'the stray file left alone');
ok(-e "$d/svc_session.json.tmp-spare" && -e "$d/agents/agent_$h->{agent}/agent.json.tmp-spare",
   'spares left alone, not reported');
is(json_file("$root/.svc_runs/run-dead.json")->{status}, 'error', 'the dead run record finished');
is(json_file(sidecar_path($h, 'live'))->{status}, 'running', 'the live session is not touched');
my %sum_after = map { $_ => sha256_hex(slurp($_)) } glob("$root/session_*/agents/*/messages/*");
is_deeply(\%sum_after, \%sum_before, 'no message file removed or rewritten');

# after repair, only what needs a person is left
$r = fsck('--json');
is_deeply(kinds($r->{json}), [sort
    'bad_message_id session_ids/agents/agent_svc-agent/messages/message_1.json',
    'message_gap session_gap/agents/agent_svc-agent/messages',
    'removed_count_range session_range/agents/agent_svc-agent/agent.json',
    'stray_file session_dmg/notes.txt',
    'unreadable session_bad/agents/agent_svc-agent/messages/message_2.json',
], 'a second check finds only what repair must not touch');
# progress on a terminal (script(1) gives svc one), on stderr; none on a pipe
like($r->{err} // '', qr/^\z/, 'no progress on a pipe');
SKIP: {
    skip 'script(1) not installed', 2 unless system('script -V >/dev/null 2>&1') == 0;
    local $ENV{SVC_HOME} = $h->{home};
    my $cmd = svc_bin() . ' fsck 2>/dev/null';
    unlike(`script -qec '$cmd' /dev/null`, qr/fsck \[/, 'stdout alone (a terminal): no bar there');
    $cmd = svc_bin() . ' fsck >/dev/null';
    like(`script -qec '$cmd' /dev/null`, qr{\rfsck \[#+\.*\] \d/6 sessions.*\r\e\[K}s,
         'a terminal on stderr gets the bar, cleared at the end');
}
my $list = jdecode(svc($h, 'sessions', 'list', '--limit', '500', '--all')->{out});
is(scalar @{ $list->{sessions} }, 6, 'the rebuilt index lists every session');

# fixed by hand: clean again (the live run ended)
flock($lk, LOCK_UN);
close $lk;
unlink "$d/notes.txt", "$d/session.json.tmp-$$-cafe";
$m->{message_id} = 1;
spit($m1, jencode($m));
system('rm', '-rf', native_dir($h, 'gap'), native_dir($h, 'bad')) == 0 or die;
$a->{conversation_manager_state}{removed_message_count} = 0;
spit($agent, jencode($a));
$r = fsck('--repair');
is($r->{rc}, 0, 'everything repaired or fixed: exit 0');
like($r->{out}, qr/stale_run: .*\[repaired\]/, 'the run that ended with its lock released is repaired');
$r = fsck();
is($r->{rc}, 0, 'clean');
like($r->{out}, qr/4 sessions checked, 0 problems/, 'zero problems');
is(svc($h, 'chat', 'dmg', 'after fsck')->{rc}, 0, 'the repaired session takes a run');
done_testing();
