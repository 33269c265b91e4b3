#!/usr/bin/perl
# The index under disk faults: with the root on a full tmpfs, or remounted read-only, a
# damaged index cannot be rewritten; listing then answers from the directories, complete
# and correct, with one clear log line; a turn fails with one io_error and leaves the files
# whole; once there is room (or the root is writable again) the index is rebuilt and
# `svc fsck` finds nothing. Needs root to mount a small tmpfs; skipped otherwise.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SvcCliTest;

my $mnt = File::Temp::tempdir('svc-ixfull-XXXXXX', TMPDIR => 1, CLEANUP => 1);
if ($> != 0 || system("mount -t tmpfs -o size=1m tmpfs $mnt 2>/dev/null") != 0) {
    plan skip_all => 'mounting a small tmpfs needs root';
}
END { system("umount $mnt 2>/dev/null") if $mnt }

my $root = "$mnt/root";
my $h = new_home(sessions_extra => "  root: $root\n");
$h->{root} = $root;
for my $i (1 .. 12) {
    is(svc($h, 'chat', "f$i", "question $i")->{rc}, 0, "turn on f$i") if $i == 1 || $i == 12;
    svc($h, 'chat', "f$i", "question $i") if $i > 1 && $i < 12;
}

sub scan {
    my @rows;
    for my $d (glob "$root/session_*") {
        my $sc = json_file("$d/svc_session.json") or next;
        push @rows, "$sc->{session_id} $sc->{updated_at} $sc->{status} $sc->{message_count}";
    }
    return [sort @rows];
}
sub listed {
    my $r = svc($h, 'sessions', 'list', '--limit', '500', '--all');
    return { rc => $r->{rc}, err => $r->{err}, rows => $r->{rc} == 0
        ? [sort map { "$_->{session_id} $_->{updated_at} $_->{status} $_->{message_count}" }
           @{ jdecode($r->{out})->{sessions} }] : [] };
}
my $l = listed();
is_deeply($l->{rows}, scan(), 'listing equals the directories');
my $ix = "$root/.svc_index.jsonl";
ok(-s $ix, 'the index exists');

# ---- full disk ----
truncate $ix, int((-s $ix) / 2) or die;
my $damaged = slurp($ix);
system("dd if=/dev/zero of=$mnt/filler bs=4k 2>/dev/null; sync");
$l = listed();
is($l->{rc}, 0, 'disk full, index damaged: the listing answers');
is_deeply($l->{rows}, scan(), '... complete and correct (from the directories)');
like($l->{err}, qr/index: could not write the index \(.*(No space|space)/, 'one clear log line');
is(slurp($ix), $damaged, 'the old index file is left as it was (no torn rewrite)');
opendir(my $d, $root);
is_deeply([grep { /\.tmp-/ } readdir $d], [], 'no temp file left behind');
my $r = svc($h, 'chat', 'f3', 'no room');
is($r->{rc}, 1, 'a turn on a full disk: exit 1');
like($r->{err}, qr/^svc: io_error: /m, 'one io_error');
is_deeply(listed()->{rows}, scan(), 'still correct after the failed turn');
unlink "$mnt/filler";
$l = listed();
is_deeply($l->{rows}, scan(), 'room again: correct');
my $f = svc($h, 'fsck');
is($f->{rc}, 0, 'room again: the index rebuilt, fsck finds nothing') or diag $f->{out};
is(svc($h, 'chat', 'f3', 'room again')->{rc}, 0, 'turns work again');

# ---- read-only root ----
truncate $ix, 10 or die;
$damaged = slurp($ix);
system("mount -o remount,ro $mnt") == 0 or die 'remount ro';
$l = listed();
is($l->{rc}, 0, 'read-only root, index damaged: the listing answers');
is_deeply($l->{rows}, scan(), '... complete and correct');
$r = svc($h, 'chat', 'f4', 'read-only');
is($r->{rc}, 1, 'a turn on a read-only root: exit 1');
like($r->{err}, qr/^svc: service_unavailable: .*Read-only/m, 'one service_unavailable naming the cause');
is(slurp($ix), $damaged, 'nothing written');
system("mount -o remount,rw $mnt") == 0 or die 'remount rw';
is_deeply(listed()->{rows}, scan(), 'writable again: correct');
is(svc($h, 'fsck')->{rc}, 0, 'writable again: fsck finds nothing');
is(svc($h, 'chat', 'f4', 'writable')->{rc}, 0, 'turns work again');
# ---- memory sync on a full disk (the memory root on its own small tmpfs, full before the
# agent's memory file exists: tmpfs appends inside a page that is already there succeed) ----
my $mmnt = File::Temp::tempdir('svc-memfull-XXXXXX', TMPDIR => 1, CLEANUP => 1);
if (system("mount -t tmpfs -o size=256k tmpfs $mmnt 2>/dev/null") == 0) {
    my $hm = new_home(yaml_extra => "memory:\n  root: $mmnt/mem\n");
    system("dd if=/dev/zero of=$mmnt/filler bs=4k 2>/dev/null; sync");
    my $r = svc($hm, 'chat', 'm1', 'remember this');
    is($r->{rc}, 0, 'memory disk full: the run still succeeds');
    my @lines = grep { /memory/i } split /\n/, $r->{err};
    is(scalar @lines, 1, 'one log line about the memory sync') or diag $r->{err};
    like($lines[0] // '', qr/(No space|space)/, '... naming the cause');
    is(slurp("$mmnt/mem/svc-agent/memory.jsonl") // '', '', 'no digest written, torn or not');
    my $ms = json_file(sidecar_path($hm, 'm1'))->{memory_state};
    like($ms->{error}{message} // '', qr/space/i, 'memory_state records the error');
    is(scalar(msg_ids($hm, 'm1')), 2, 'the turn itself is stored');
    unlink "$mmnt/filler";
    is(svc($hm, 'chat', 'm1', 'room again')->{rc}, 0, 'room again: a turn');
    my @d = grep { length } split /\n/, (slurp("$mmnt/mem/svc-agent/memory.jsonl") // '');
    is(scalar @d, 1, 'the memory file holds the newest digest');
    like($d[0] // '', qr/room again/, '... of the newest pair');
    ok(!json_file(sidecar_path($hm, 'm1'))->{memory_state}{error}, 'the error is cleared');
    is(svc($hm, 'fsck')->{rc}, 0, 'fsck: clean');
    system("umount $mmnt");
}
done_testing();
