#!/usr/bin/perl
# A rebuild of the index from the directories (the journal lost, a first start on a root
# svc never indexed) reads every session without the root lock: turns, new sessions and
# deletions and archives made meanwhile neither wait for it nor get lost. A test hook
# (SVC_TEST_INDEX_SCAN_GATE) holds the rebuild once it has read every session while the
# writes run; the list after it must equal the directories. A list held up meanwhile says how
# far the rebuild is.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);
use SvcCliTest;

plan skip_all => 'needs a test build (make TEST_HOOKS=1)' unless test_hooks_built();

my $h = new_home();
my $root = $h->{root};
is(svc($h, 'chat', "r$_", "question $_")->{rc}, 0, "turn on r$_") for 1 .. 6;

sub scan {
    my @rows;
    for my $d (glob "$root/session_*") {
        my $sc = json_file("$d/svc_session.json") or next;
        push @rows, "$sc->{session_id} $sc->{updated_at} $sc->{message_count} "
            . ($sc->{archived} ? 'archived' : 'active');
    }
    return [sort @rows];
}
sub listed {
    my $r = svc($h, 'sessions', 'list', '--limit', '500', '--all');
    is($r->{rc}, 0, 'the list answers') or diag($r->{err});
    return [sort map { "$_->{session_id} $_->{updated_at} $_->{message_count} "
            . ($_->{archived} ? 'archived' : 'active') }
        @{ jdecode($r->{out})->{sessions} }];
}
is_deeply(listed(), scan(), 'the list equals the directories');

# lose the journal (and this home's listing database): the next list reads the directories
unlink "$root/.svc_index.jsonl" or die;
system('rm', '-rf', "$h->{home}/search");
my $gate = "$h->{home}/gate";
my $bg = svc_bg($h, { SVC_TEST_INDEX_SCAN_GATE => $gate }, 'sessions', 'list', '--all');
my $waited = 0;
$waited += 0.05, sleep 0.05 until -e "$gate.waiting" || $waited > 30;
ok(-e "$gate.waiting", 'the rebuild has started and holds');

# writes while it holds: each must finish without waiting for it (alarm: a wait is a fail)
sub timed_svc {
    my (@args) = @_;
    my $b = svc_bg($h, @args);
    my $r;
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 20;
        $r = svc_wait($b);
        alarm 0;
    };
    if ($@) {
        kill 'KILL', $b->{pid};
        waitpid($b->{pid}, 0);
        return { rc => -2, err => 'waited for the rebuild' };
    }
    return $r;
}
is(timed_svc('chat', 'r2', 'during the rebuild')->{rc}, 0, 'a turn does not wait for the rebuild');
is(timed_svc('chat', 'n1', 'a new session')->{rc}, 0, 'a new session does not wait for it');
is(timed_svc('sessions', 'delete', 'r5')->{rc}, 0, 'a deletion does not wait for it');
is(timed_svc('sessions', 'archive', 'r3')->{rc}, 0, 'an archive does not wait for it');

my $l = timed_svc('sessions', 'list');
is($l->{rc}, 1, 'a list meanwhile waits a bounded time, then fails');
like($l->{err}, qr/rebuilding the session index/, '... saying another process rebuilds the index');
like($l->{err}, qr/\(6 of 6 sessions read\)/, '... and how far it is (held once all 6 are read)');

open my $fh, '>', $gate or die;
close $fh;
my $r = svc_wait($bg);
is($r->{rc}, 0, 'the held list answers once let go') or diag($r->{err});
my @ids = sort map { $_->{session_id} } @{ jdecode($r->{out})->{sessions} };
is_deeply(\@ids, [qw(n1 r1 r2 r3 r4 r6)], '... with the sessions as they are after the writes');

my $rows = listed();
is_deeply($rows, scan(),
    'the next list equals the directories (the turn, the new session, the deletion, the archive)');
is(scalar(grep { /^r2 .* 4 active$/ } @$rows), 1, 'r2 counts the turn made during the rebuild');
is(scalar(grep { /^r3 .* archived$/ } @$rows), 1, 'r3 is archived');
my $f = svc($h, 'fsck');
is($f->{rc}, 0, 'svc fsck finds nothing') or diag($f->{out} . $f->{err});

# svc fsck's check of the index walks the directories without the root lock too: writes
# made while it is held there neither wait nor show up as problems
unlink $gate, "$gate.waiting";
my $fb = svc_bg($h, { SVC_TEST_INDEX_SCAN_GATE => $gate }, 'fsck');
$waited = 0;
$waited += 0.05, sleep 0.05 until -e "$gate.waiting" || $waited > 30;
ok(-e "$gate.waiting", 'fsck is walking the directories and holds');
is(timed_svc('chat', 'r1', 'during fsck')->{rc}, 0, 'a turn does not wait for fsck');
is(timed_svc('chat', 'n2', 'new during fsck')->{rc}, 0, 'a new session does not wait for it');
is(timed_svc('sessions', 'delete', 'r6')->{rc}, 0, 'a deletion does not wait for it');
open $fh, '>', $gate or die;
close $fh;
$f = svc_wait($fb);
is($f->{rc}, 0, 'fsck finds nothing: the writes made meanwhile are in the index')
    or diag($f->{out} . $f->{err});
is_deeply(listed(), scan(), 'the list equals the directories after them');

# and a difference already there is still found, whatever is written meanwhile: a sidecar
# rewritten behind svc's back
my $sc = json_file(sidecar_path($h, 'r4'));
$sc->{title} = 'changed behind svc';
spit(sidecar_path($h, 'r4'), jencode($sc));
unlink $gate, "$gate.waiting";
$fb = svc_bg($h, { SVC_TEST_INDEX_SCAN_GATE => $gate }, 'fsck');
$waited = 0;
$waited += 0.05, sleep 0.05 until -e "$gate.waiting" || $waited > 30;
is(timed_svc('chat', 'r2', 'during the second fsck')->{rc}, 0, 'a turn meanwhile');
open $fh, '>', $gate or die;
close $fh;
$f = svc_wait($fb);
is($f->{rc}, 1, 'fsck: the summary changed behind svc is a problem');
like($f->{out}, qr/outdated summary of session r4/, '... naming that session');

done_testing();
