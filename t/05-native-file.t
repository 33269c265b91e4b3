#!/usr/bin/perl
# provider: native_file writes only the framework's native files during runs; the
# dashboard reads still work from them, and svc_session.json appears only on archive.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

my $h = new_home(sessions_extra => "  provider: native_file\n");
my $r = svc($h, 'chat', 'nf', "first line\nsecond line");
is($r->{rc}, 0, 'turn 1') or diag($r->{err});
$r = svc($h, 'chat', 'nf', 'again');
is($r->{rc}, 0, 'turn 2') or diag($r->{err});
like($r->{out}, qr/given 2 earlier messages/, 'context restored from the native files');

my $dir = native_dir($h, 'nf');
ok(-f "$dir/session.json", 'session.json written');
ok(-f "$dir/agents/agent_svc-agent/agent.json", 'agent.json written');
ok(!-e "$dir/svc_session.json", 'no svc_session.json during runs');
ok(!-e "$dir/svc_turns.jsonl", 'no svc_turns.jsonl');
ok(!-e "$dir/svc_memory.json", 'no svc_memory.json');
is_deeply([msg_ids($h, 'nf')], [0, 1, 2, 3], 'four native messages');

$r = svc($h, 'sessions', 'list');
is($r->{rc}, 0, 'list works');
my $l = jdecode($r->{out});
is(scalar @{ $l->{sessions} }, 1, 'one session listed');
my $s = $l->{sessions}[0];
is($s->{session_id}, 'nf', 'listed by id');
is($s->{title}, 'first line second line', 'derived title, newline folded');
is($s->{message_count}, 4, 'count from the files, current after the second turn');
is($s->{status}, 'idle', 'status idle');

$r = svc($h, 'sessions', 'messages', 'nf');
is(jdecode($r->{out})->{total}, 4, 'messages from the native files');

$r = svc($h, 'sessions', 'archive', 'nf');
is($r->{rc}, 0, 'archive');
ok(-f "$dir/svc_session.json", 'archive writes svc_session.json');
$r = svc($h, 'chat', 'nf', 'refused?');
is($r->{rc}, 1, 'an archived session refuses a run under native_file too');
like($r->{err}, qr/session_archived/, 'session_archived');
is_deeply([msg_ids($h, 'nf')], [0, 1, 2, 3], 'nothing stored by the refused run');
is(svc($h, 'sessions', 'unarchive', 'nf')->{rc}, 0, 'unarchive');
is(svc($h, 'chat', 'nf', 'works again')->{rc}, 0, 'runs again after unarchive');
ok(!-e "$dir/svc_turns.jsonl", 'still no svc_turns.jsonl');

done_testing();
