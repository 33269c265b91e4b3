#!/usr/bin/perl
# Disk errors: with the session root on a full filesystem, a turn fails with one clear
# io_error (CLI exit 1, HTTP 500 JSON), leaves every file whole and the ids contiguous, and
# the session works again once there is room. Needs root to mount a small tmpfs; skipped
# otherwise.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SvcCliTest;
use SvcTest;

my $mnt = File::Temp::tempdir('svc-full-XXXXXX', TMPDIR => 1, CLEANUP => 1);
if ($> != 0 || system("mount -t tmpfs -o size=512k tmpfs $mnt 2>/dev/null") != 0) {
    plan skip_all => 'mounting a small tmpfs needs root';
}
END { system("umount $mnt 2>/dev/null") if $mnt }

sub fill {
    my ($path) = @_;
    system("dd if=/dev/zero of=$path bs=4k 2>/dev/null");   # until ENOSPC
    system("sync");
}
sub all_files_parse {
    my ($dir) = @_;
    my $bad = 0;
    File::Find::find({ no_chdir => 1, wanted => sub {
        return unless -f $_ && /\.json$/;
        my $d = slurp($_);
        $bad++ unless defined $d && eval { jdecode($d); 1 };
    } }, $dir);
    return $bad == 0;
}
use File::Find ();

# ---- the svc tool ----
{
    my $root = "$mnt/cli";
    my $h = new_home(sessions_extra => "  root: $root\n");
    $h->{root} = $root;
    is(svc($h, 'chat', 'full', 'hello')->{rc}, 0, 'a turn while there is room');
    fill("$mnt/filler");
    my $r = svc($h, 'chat', 'full', 'no room for this');
    is($r->{rc}, 1, 'disk full: exit 1');
    like($r->{err}, qr/^svc: io_error: .*(No space|space)/m, 'one line naming the disk error');
    is((split /\n/, $r->{err})[-1] =~ /io_error/ ? 1 : 0, 1, 'the error is the last line');
    ok(all_files_parse(native_dir($h, 'full')), 'every file still parses');
    is_deeply([msg_ids($h, 'full')], [0, 1], 'no message stored, ids contiguous');
    opendir(my $d, native_dir($h, 'full'));
    # (a spare, core/fsio.h, is kept on purpose: it holds the sidecar as it was)
    is_deeply([grep { /\.tmp-/ && !/\.tmp-spare$/ } readdir $d], [], 'no temp file left behind');
    unlink "$mnt/filler";
    $r = svc($h, 'chat', 'full', 'room again');
    is($r->{rc}, 0, 'with room again the session takes the next turn') or diag $r->{err};
    like($r->{out}, qr/given 2 earlier messages/, 'and sees its history');
    is(json_file(sidecar_path($h, 'full'))->{status}, 'idle', 'status idle');
}

# ---- through nginx ----
{
    my $root = "$mnt/http";
    my $s = SvcTest->start(config => "sessions:\n  root: $root\n");
    my $ok = $s->req(POST => '/api/chat',
        body => { session_id => 'hf', messages => [{ role => 'user', content => 'hi' }] });
    is($ok->{status}, 200, 'HTTP: a turn while there is room');
    fill("$mnt/filler");
    my $r = $s->req(POST => '/api/chat',
        body => { session_id => 'hf', messages => [{ role => 'user', content => 'full' }] });
    is($r->{status}, 500, 'HTTP: disk full: 500');
    is($r->{json} && $r->{json}{error}{code}, 'io_error', 'HTTP: io_error');
    is($r->{json} && $r->{json}{error}{type}, 'server_error', 'HTTP: server_error');
    $r = $s->req(GET => '/api/v1/chat/sessions/hf');
    is($r->{status}, 200, 'HTTP: the session still reads');
    is($r->{json}{message_count}, 2, 'HTTP: message_count true to the files');
    unlink "$mnt/filler";
    $r = $s->req(POST => '/api/chat',
        body => { session_id => 'hf', messages => [{ role => 'user', content => 'again' }] });
    is($r->{status}, 200, 'HTTP: with room again: 200');
    $s->stop;
}

done_testing();
