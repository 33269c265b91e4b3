#!/usr/bin/perl
# Retention (SPEC 13.2) over sessions made old by their timestamps: `svc retention --dry-run`
# changes nothing, `svc retention` archives, exports then deletes, keeps pinned sessions and
# skips a session a run holds; `svc jobs run-due` applies it on its schedule exactly once
# when two invocations race (two hosts on one root); GET /api/jobs shows it.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Fcntl qw(:flock);
use POSIX qw(strftime);
use SvcTest;
use SvcCliTest qw(svc svc_bg svc_wait test_hooks_built);

plan skip_all => 'SVC_TEST_JOBS_NOW needs a test build (make TEST_HOOKS=1; make test does)'
    unless test_hooks_built() && SvcTest::test_hooks_built();

my $J = $SvcTest::JSON;
my $home = SvcTest->make_home('');
my $EXP = "$home/retained";
SvcTest::write_file("$home/agents.yaml", SvcTest::with_defaults(<<"Y"));
retention:
  archive_after_days: 30
  delete_archived_after_days: 60
  delete_after_days: 365
  keep_pinned: true
  export_before_delete: "$EXP"
  schedule: "17 3 * * *"
Y
my $s = SvcTest->start(home => $home, workers => 2);
my $ROOT = $s->root;
my $H = { home => $home };

sub iso_ago { strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', gmtime(time - $_[0] * 86400)) }
# A session as another program leaves it, last changed $days ago; %sc: a sidecar too.
sub old_session {
    my ($sid, $days, %sc) = @_;
    my $ts = iso_ago($days);
    my $adir = "$ROOT/session_$sid/agents/agent_svc-agent";
    system('mkdir', '-p', "$adir/messages") == 0 or die;
    SvcTest::write_file("$ROOT/session_$sid/session.json", $J->encode({
        session_id => $sid, session_type => 'AGENT', created_at => $ts, updated_at => $ts }));
    for my $i (0, 1) {
        SvcTest::write_file("$adir/messages/message_$i.json", $J->encode({
            message => { role => $i ? 'assistant' : 'user', content => [{ text => "$sid $i" }] },
            message_id => $i, redact_message => undef, created_at => $ts, updated_at => $ts }));
    }
    return unless %sc;
    SvcTest::write_file("$ROOT/session_$sid/svc_session.json", $J->encode({
        schema_version => 1, session_id => $sid, agent_id => 'svc-agent', title => $sid,
        status => 'idle', archived => JSON::PP::false, created_at => $ts, updated_at => $ts,
        message_count => 2, turn_count => 1, run_count => 1, %sc }));
}
sub summary { $s->req(GET => "/api/v1/chat/sessions/$_[0]")->{json} }
# the sessions' files (the listing index and lock files are a reader's, not a change)
sub tree { join "\n", map { $_ . ' ' . (-s $_) } grep { !m{/\.svc_index|/\.svc(\.run)?\.lock$} } SvcTest::files_under($ROOT) }

is $s->req(POST => '/api/chat', body => { session_id => 'fresh', messages => [{ role => 'user', content => 'hi' }] })->{status}, 200, 'a fresh session';
old_session('old-del', 400);
old_session('old-arch', 45);
old_session('arch-old', 90, archived => JSON::PP::true);
old_session('arch-young', 20, archived => JSON::PP::true);
old_session('pinned-old', 400, pinned => JSON::PP::true);
old_session('busy-old', 400);
old_session('young', 10);
is summary('old-del')->{message_count}, 2, 'the old sessions are there';

open my $lk, '>>', "$ROOT/session_busy-old/.svc.run.lock" or die;
flock($lk, LOCK_EX) or die;

# ---- --dry-run changes nothing ----
my $before = tree();
my $c = svc($H, 'retention', '--dry-run');
is $c->{rc}, 0, 'svc retention --dry-run' or diag $c->{err};
my %lines = map { /^(\w+) (\S+): (.*)$/ ? ($2 => "$1: $3") : () } split /\n/, $c->{out};
is_deeply \%lines, {
    'old-del'  => 'delete: not updated for 400 days',
    'old-arch' => 'archive: not updated for 45 days',
    'arch-old' => 'delete: archived, not updated for 90 days',
    'busy-old' => 'skip: a run holds it',
}, 'one line per session and action';
like $c->{out}, qr/^retention \(dry run, nothing changed\): 1 archived, 2 deleted, 1 skipped$/m, 'the counts';
is tree(), $before, 'no file changed';

# ---- the pass ----
$c = svc($H, 'retention');
is $c->{rc}, 0, 'svc retention' or diag $c->{err};
like $c->{out}, qr/^retention: 1 archived, 2 deleted, 1 skipped; exported first to \Q$EXP\E\/chat-export-\S+\.tar\.gz$/m, 'the counts and the export';
ok !-e "$ROOT/session_old-del" && !-e "$ROOT/session_arch-old", 'the two deleted';
is summary('old-arch')->{archived}, JSON::PP::true, 'old-arch archived';
ok -d "$ROOT/session_$_", "$_ kept" for qw(pinned-old busy-old young arch-young fresh);
is summary('pinned-old')->{archived}, JSON::PP::false, 'the pinned one not even archived';
my ($tgz) = glob("$EXP/chat-export-*.tar.gz");
ok $tgz, 'one bundle in export_before_delete';
my @members = split /\n/, `tar -tzf $tgz`;
ok((grep { m{/native/session_old-del/session\.json$} } @members) && (grep { m{/native/session_arch-old/} } @members), 'it holds the deleted sessions');
ok !(grep { m{/native/session_old-arch/} } @members), 'and only them';
like $c->{err}, qr/session old-del deleted/, 'the deletions are logged';

$c = svc($H, 'retention');
like $c->{out}, qr/^retention: 0 archived, 0 deleted, 1 skipped$/m, 'a second pass: only the busy one again';
close $lk;

# ---- an export that fails deletes nothing ----
old_session('old-x', 400);
SvcTest::write_file("$home/blockfile", "a file where the export directory should be\n");
my $noexp = "$home/noexp.yaml";
SvcTest::write_file($noexp, SvcTest::with_defaults("retention:\n  delete_after_days: 365\n  export_before_delete: \"$home/blockfile/x\"\n"));
$c = svc($H, '--config', $noexp, 'retention');
is $c->{rc}, 1, 'an export that fails: exit 1';
like $c->{err}, qr/^svc: \w+: /, 'one error line';
ok -d "$ROOT/session_old-x", 'nothing deleted';
is summary('pinned-old')->{session_id}, 'pinned-old', 'nor anything else';

# ---- bad configuration: a clear error ----
my $bad = "$home/bad.yaml";
SvcTest::write_file($bad, "retention:\n  delete_after_days: -3\n");
$c = svc($H, '--config', $bad, 'retention');
is $c->{rc}, 1, 'a negative age: exit 1';
like $c->{err}, qr/retention\.delete_after_days: -3 is out of range/, 'naming the key';
SvcTest::write_file($bad, "retention:\n  schedule: \"61 * * * *\"\n");
like svc($H, '--config', $bad, 'retention')->{err}, qr/retention\.schedule/, 'a bad schedule names the key';

# ---- svc jobs run-due: on its schedule, once across racing invocations ----
old_session('old-2', 400);
my $day = strftime('%Y-%m-%d', gmtime(time + 86400));
my %not_yet = (SVC_TEST_JOBS_NOW => "${day}T03:16:30Z");
$c = svc($H, \%not_yet, 'jobs', 'run-due');
my ($row) = grep { $_->{id} eq 'retention' } @{ $J->decode($c->{out})->{jobs} };
is $row->{result}, 'not_due', 'before 03:17: not due';
ok -d "$ROOT/session_old-2", 'nothing deleted';
my %due = (SVC_TEST_JOBS_NOW => "${day}T03:17:20Z");
my @bg = map { svc_bg($H, \%due, 'jobs', 'run-due') } 1 .. 2;
my @res = map { my $r = svc_wait($_); my ($x) = grep { $_->{id} eq 'retention' } @{ $J->decode($r->{out})->{jobs} }; $x->{result} } @bg;
is scalar(grep { $_ eq 'done' } @res), 1, 'two racing invocations: one pass' or diag "@res";
ok((grep { $_ eq 'locked' || $_ eq 'not_due' } @res), 'the other locked out or not due');
ok !-e "$ROOT/session_old-2" && !-e "$ROOT/session_busy-old" && !-e "$ROOT/session_old-x", 'old-2, old-x, and busy-old now that no run holds it, deleted by the pass';
$c = svc($H, \%due, 'jobs', 'run-due');
($row) = grep { $_->{id} eq 'retention' } @{ $J->decode($c->{out})->{jobs} };
is $row->{result}, 'not_due', 'the same minute again: not due';
my $state = $J->decode(SvcTest::read_file("$ROOT/.svc_retention.json"));
is $state->{last_due_at}, "${day}T03:17:00.000000+00:00", 'the state on the root says which minute ran';

# ---- GET /api/jobs ----
my $jobs = $s->req(GET => '/api/jobs')->{json}{jobs};
my ($rj) = grep { $_->{id} eq 'retention' } @$jobs;
ok $rj, 'GET /api/jobs lists retention';
is $rj->{schedule}, '17 3 * * *', 'its schedule';
is $rj->{last_status}, 'done', 'its last status';
is $rj->{last_counts}{deleted}, 3, 'its last counts';
like $rj->{next_run_at}, qr/T03:17:00/, 'its next run';

done_testing;
