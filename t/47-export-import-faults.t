#!/usr/bin/perl
# Export and import under disk faults. With the destination (or the root) on a full tmpfs,
# or remounted read-only, POST /api/v1/chat/sessions/export (directory and tar.gz), `svc
# export` and `svc import` each give one clear error (HTTP 500 io_error JSON; CLI exit 1 and
# one "svc: io_error:" line), leave no half bundle under a final name and no temp or staging
# file, leave every session as it was (no partial import, an overwritten session untouched),
# and work again once there is room or the mount is writable. Needs root to mount a small
# tmpfs; skipped otherwise.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SvcCliTest;
use SvcTest;

my $mnt = File::Temp::tempdir('svc-xfull-XXXXXX', TMPDIR => 1, CLEANUP => 1);
if ($> != 0 || system("mount -t tmpfs -o size=1m tmpfs $mnt 2>/dev/null") != 0) {
    plan skip_all => 'mounting a small tmpfs needs root';
}
END { system("umount $mnt 2>/dev/null") if $mnt }

sub fill { system("dd if=/dev/zero of=$mnt/filler bs=4k 2>/dev/null; sync") }
sub room { unlink "$mnt/filler" or die "unlink filler: $!" }
sub entries {    # every entry of a directory, hidden ones too
    my ($d) = @_;
    opendir(my $dh, $d) or return '';
    return join ',', sort grep { !/^\.\.?$/ } readdir $dh;
}
sub tree {       # every path and size under a directory (lock files aside): its state
    my ($d) = @_;
    my @out;
    File::Find::find({ no_chdir => 1, wanted => sub {
        return if /\.svc_(import\.lock|index\.build)$/;
        push @out, substr($_, length $d) . ':' . (-d $_ ? 'd' : -s _);
    } }, $d);
    return join "\n", sort @out;
}
use File::Find ();

# ---- through nginx: the export endpoint ----
my $exp = "$mnt/exp";
mkdir $exp or die;
my $hroot = "$mnt/http";
my $s = SvcTest->start(config => "sessions:\n  root: $hroot\n  export_default_dir: $exp\n");
for my $sid (qw(ea eb)) {
    my $r = $s->req(POST => '/api/chat',
        body => { session_id => $sid, messages => [{ role => 'user', content => "hello $sid" }] });
    is($r->{status}, 200, "HTTP: a turn on $sid");
}
my $r = $s->req(POST => '/api/v1/chat/sessions/export', body => {});
is($r->{status}, 200, 'HTTP: an export while there is room');
my $before = entries($exp);
like($before, qr/^chat-export-[^,]+$/, 'one bundle in the destination');
my $sessions = tree($hroot);

sub export_fails {
    my ($what, $cause) = @_;
    for my $format (qw(dir tar.gz)) {
        my $r = $s->req(POST => '/api/v1/chat/sessions/export', body => { format => $format });
        is($r->{status}, 500, "HTTP: $what, $format: 500");
        is($r->{json} && $r->{json}{error}{code}, 'io_error', "HTTP: $what, $format: io_error");
        like($r->{json} && $r->{json}{error}{message}, $cause, "HTTP: $what, $format: the cause");
        is(entries($exp), $before, "HTTP: $what, $format: no bundle, no temp left");
    }
    is(tree($hroot), $sessions, "HTTP: $what: the sessions are as they were");
}
sub export_works {
    my ($what) = @_;
    for my $format (qw(dir tar.gz)) {
        my $r = $s->req(POST => '/api/v1/chat/sessions/export', body => { format => $format });
        is($r->{status}, 200, "HTTP: $what, $format: 200");
        is($r->{json} && $r->{json}{session_count}, 2, "HTTP: $what, $format: both sessions");
        my $where = $r->{json} && ($r->{json}{export_dir} // $r->{json}{export_file}) // '';
        ok($format eq 'dir' ? -s "$where/manifest.json" : -s $where, "HTTP: $what, $format: the bundle is there");
    }
}
fill();
export_fails('disk full', qr/(No space|space)/);
room();
export_works('room again');
$before = entries($exp);
$sessions = tree($hroot);
if (system("mount -o remount,ro $mnt") == 0) {
    export_fails('read-only', qr/Read-only/);
    system("mount -o remount,rw $mnt") == 0 or die 'remount rw';
    export_works('writable again');
} else {
    diag 'remount read-only refused while the pool runs (files open for writing): skipped';
}
$s->stop;
system("rm -rf $hroot $exp");

# ---- the svc tool: export ----
my $root = "$mnt/root";
my $h = new_home(sessions_extra => "  root: $root\n");
$h->{root} = $root;
is(svc($h, 'chat', 'ca', 'first')->{rc}, 0, 'CLI: a turn on ca');
is(svc($h, 'chat', 'cb', 'second')->{rc}, 0, 'CLI: a turn on cb');
my $out = "$mnt/out";
mkdir $out or die;
$sessions = tree($root);

sub cli_fails {
    my ($what, $cause, @args) = @_;
    my $r = svc($h, @args);
    is($r->{rc}, 1, "CLI: $what: exit 1");
    my @lines = grep { /^svc: io_error: / } split /\n/, $r->{err};
    is(scalar @lines, 1, "CLI: $what: one io_error line") or diag $r->{err};
    like($lines[0] // '', $cause, "CLI: $what: naming the cause");
    return $r;
}
fill();
for my $tar (0, 1) {
    cli_fails("export on a full disk" . ($tar ? ' (tar)' : ''), qr/(No space|space)/,
              'export', '--out', $out, $tar ? ('--tar') : ());
    is(entries($out), '', 'CLI: no bundle, no temp left' . ($tar ? ' (tar)' : ''));
}
room();
is(tree($root), $sessions, 'CLI: the sessions are as they were');

# Bundles to import live off the tmpfs; the root is on it.
my $bdir = File::Temp::tempdir('svc-xb-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $hb = new_home();
is(svc($hb, 'chat', 'ca', 'from elsewhere ' . ('x' x 4000))->{rc}, 0, 'a session to import over ca');
is(svc($hb, 'chat', 'nw', 'a new one ' . ('y' x 4000))->{rc}, 0, 'a new session to import');
is(svc($hb, 'export', '--out', $bdir)->{rc}, 0, 'a bundle directory');
is(svc($hb, 'export', '--out', $bdir, '--tar')->{rc}, 0, 'a tar.gz bundle');
my ($bundle_dir) = grep { -d } glob "$bdir/chat-export-*";
my ($bundle_tar) = glob "$bdir/chat-export-*.tar.gz";
ok($bundle_dir && $bundle_tar, 'both bundles written');
is(svc($h, 'export', '--out', $out)->{rc}, 0, 'CLI: room again: export works');
is(svc($h, 'export', '--out', $out, '--tar')->{rc}, 0, 'CLI: room again: export --tar works');
system("rm -rf $out/*");

# ---- the svc tool: import ----
$sessions = tree($root);
sub import_left_nothing {
    my ($what) = @_;
    is(tree($root), $sessions, "CLI: $what: the root is as it was (no partial session)");
    is(scalar(grep { /^\.svc_import-/ } split /,/, entries($root)), 0, "CLI: $what: no staging left");
}
fill();
for my $b ($bundle_dir, $bundle_tar) {
    my $kind = $b =~ /\.tar\.gz$/ ? 'tar.gz' : 'dir';
    cli_fails("import ($kind) on a full disk", qr/(No space|space)/, 'import', $b, '--overwrite');
    import_left_nothing("import ($kind) on a full disk");
}
room();
if (system("mount -o remount,ro $mnt") == 0) {
    for my $b ($bundle_dir, $bundle_tar) {
        my $kind = $b =~ /\.tar\.gz$/ ? 'tar.gz' : 'dir';
        cli_fails("import ($kind) on a read-only root", qr/Read-only/, 'import', $b, '--overwrite');
    }
    cli_fails('export on a read-only mount', qr/Read-only/, 'export', '--out', $out);
    system("mount -o remount,rw $mnt") == 0 or die 'remount rw';
    import_left_nothing('read-only');
    is(entries($out), '', 'CLI: read-only: no bundle');
} else {
    fail('remount read-only');
}
$r = svc($h, 'import', $bundle_tar, '--overwrite');
is($r->{rc}, 0, 'CLI: room again: the import works') or diag $r->{err};
like($r->{out}, qr/imported 2 sessions/, 'CLI: both sessions imported');
is(svc($h, 'fsck')->{rc}, 0, 'CLI: fsck finds nothing');
$r = svc($h, 'chat', 'nw', 'continue');
like($r->{out}, qr/given 2 earlier messages/, 'CLI: the imported session continues');

done_testing();
