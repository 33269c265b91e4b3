#!/usr/bin/perl
# A read-only session root (a read-only bind mount of a root that sessions were written to):
# every session stays readable through nginx and the svc tool (detail, messages, tokens, the
# listing; sessions whose lock files exist, one without any, one left `running` by a run
# that died), an export of it succeeds
# whole into a writable destination, and a turn (or any other write) answers 503
# service_unavailable with the reason and `x-should-retry: true` (the CLI exits 1 naming
# it), changing nothing on disk.
# Needs root to mount; skipped otherwise.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SvcCliTest;
use SvcTest;

my $d = File::Temp::tempdir('svc-ro-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my ($rw, $ro) = ("$d/rw", "$d/ro");
mkdir $_ or die "mkdir $_: $!" for $rw, $ro;
plan skip_all => 'a read-only bind mount needs root' if $> != 0;
system("mount --bind $rw $ro") == 0 or plan skip_all => 'mount --bind refused';
my $mounted = 1;
END { system("umount $ro 2>/dev/null || umount -l $ro") if $mounted }

# Sessions written while the root is writable; one of them without lock files (as a root
# copied without them would be).
my $w = new_home(sessions_extra => "  root: $rw\n");
for my $sid (qw(r1 r2 r3)) {
    is(svc($w, 'chat', $sid, "hello $sid")->{rc}, 0, "a turn on $sid");
}
unlink "$rw/session_r3/.svc.lock", "$rw/session_r3/.svc.run.lock";
ok(!-e "$rw/session_r3/.svc.lock", 'r3 has no lock file');
# r2 says `running` with no run alive (a run cut by the failure that made the root
# read-only): a reader cannot repair it there, and reads it as it is
my $sc = json_file("$rw/session_r2/svc_session.json");
$sc->{status} = 'running';
spit("$rw/session_r2/svc_session.json", jencode($sc));
system("mount -o remount,bind,ro $ro") == 0 or die "remount ro: $?";
ok(!open(my $probe, '>', "$ro/probe"), 'the root is read-only') and like("$!", qr/Read-only/,
    '... EROFS');

sub state_of {    # every path, size and mtime under the writable side: what is on disk
    my @out;
    for my $f (SvcTest::files_under($rw)) {
        my @st = lstat $f;
        push @out, "$f $st[7] $st[9]";
    }
    return join "\n", @out;
}
my $before = state_of();

# ---- through nginx ----
my $exp = "$d/exp";
mkdir $exp or die;
my $s = SvcTest->start(config => "sessions:\n  root: $ro\n  export_default_dir: $exp\n");
my $h = $s->req(GET => '/api/health');
is($h->{status}, 503, 'health: 503');
is($h->{json}{status}, 'degraded', 'health: degraded');
like($h->{json}{reason} // '', qr/read-only/i, 'health: the reason names the read-only root');
# the root named with the system's error (SPEC 19, issue 35 item 8), in reasons too
is_deeply($h->{json}{reasons}, ["session root $ro: not writable: Read-only file system"],
          'health: reasons names the root and the error');
like($s->log, qr/session root \Q$ro\E: not writable: Read-only file system: reads go on/,
     'at start: the root and the error in the log');
my $l = $s->req(GET => '/api/v1/chat/sessions');
is($l->{status}, 200, 'list: 200');
is(join(',', sort map { $_->{session_id} } @{ $l->{json}{sessions} || [] }), 'r1,r2,r3',
   'list: every session');
for my $sid (qw(r1 r2 r3)) {
    my $r = $s->req(GET => "/api/v1/chat/sessions/$sid");
    is($r->{status}, 200, "detail of $sid: 200") or diag $r->{body};
    is($r->{json}{session_id}, $sid, "detail of $sid: the session");
    $r = $s->req(GET => "/api/v1/chat/sessions/$sid/messages");
    is($r->{status}, 200, "messages of $sid: 200") or diag $r->{body};
    is(scalar @{ $r->{json}{messages} || [] }, 2, "messages of $sid: both");
    $r = $s->req(GET => "/api/chat/sessions/$sid/tokens");
    is($r->{status}, 200, "tokens of $sid: 200") or diag $r->{body};
}
is($s->req(GET => '/api/v1/chat/sessions/nosuch')->{status}, 404, 'an unknown session: 404');

# A turn: 503 with the reason, a retry hint, nothing stored (existing and new sessions,
# plain and streamed).
for my $c (['r1', 0], ['r1', 1], ['fresh', 0]) {
    my ($sid, $stream) = @$c;
    my $what = "turn on $sid" . ($stream ? ' (stream)' : '');
    my $r = $s->req(POST => '/api/chat', body => { session_id => $sid, stream => $stream ? \1 : \0,
        messages => [{ role => 'user', content => 'more' }] });
    is($r->{status}, 503, "$what: 503") or diag $r->{body};
    is($r->{json} && $r->{json}{error}{code}, 'service_unavailable', "$what: service_unavailable");
    like($r->{json} && $r->{json}{error}{message}, qr/^session root \Q$ro\E: not writable: Read-only file system/,
         "$what: the reason names the root and the error");
    is($r->{headers}{'x-should-retry'}, 'true', "$what: x-should-retry: true");
}
# The other writes answer the same: an asynchronous run, a Responses API turn, a rename, an
# archive.
for my $c ([POST => '/api/chat/runs', { session_id => 'r2', messages => [{ role => 'user', content => 'x' }] }],
           [POST => '/api/v1/responses', { input => 'x', metadata => { session_id => 'r2' } }],
           [PATCH => '/api/v1/chat/sessions/r2', { title => 'renamed' }],
           [POST => '/api/v1/chat/sessions/r2/archive', {}]) {
    my ($m, $p, $b) = @$c;
    my $r = $s->req($m => $p, body => $b);
    is($r->{status}, 503, "$m $p: 503") or diag $r->{body};
    is($r->{json} && $r->{json}{error}{code}, 'service_unavailable', "$m $p: service_unavailable");
    like($r->{json} && $r->{json}{error}{message}, qr/^session root \Q$ro\E: not writable: Read-only file system/,
         "$m $p: the root and the error");
}
is(state_of(), $before, 'the turns changed nothing on disk');
# listings do not claim an index was rebuilt (none can be kept): one line says why, once
$s->req(GET => '/api/v1/chat/sessions') for 1 .. 6;
unlike($s->log, qr/index: rebuilt from the directories|index: built the listing database/,
       'no "index: rebuilt" or "built" lines for listings of a root that cannot be written');
my @said = $s->log =~ /(index: the session root \Q$ro\E cannot be written)/g;
cmp_ok(scalar @said, '>=', 1, 'the index says once per process why it keeps none');
# a reload names it again
kill 'HUP', $s->master_pid;
ok(SvcTest::wait_for(10, sub { $s->log =~ /reloaded configuration/ }), 'SIGHUP: reloaded');
my @start = $s->log =~ /(session root \Q$ro\E: not writable: Read-only file system: reads go on)/g;
is(scalar @start, 2, 'on reload: the root and the error in the log again');

# The export reads and needs no write: whole, no warning, nothing left out.
my $r = $s->req(POST => '/api/v1/chat/sessions/export', body => {});
is($r->{status}, 200, 'export: 200') or diag $r->{body};
is($r->{json}{session_count}, 3, 'export: every session');
is($r->{json}{message_count}, 6, 'export: every message');
is_deeply($r->{json}{warnings}, [], 'export: no warning');
is_deeply($r->{json}{left_out}, [], 'export: nothing left out');
$s->stop;

# ---- the svc tool ----
my $c = new_home(sessions_extra => "  root: $ro\n");
for my $sid (qw(r2 r3)) {
    my $x = svc($c, 'sessions', 'show', $sid);
    is($x->{rc}, 0, "svc sessions show $sid") or diag $x->{err};
    $x = svc($c, 'sessions', 'messages', $sid);
    is($x->{rc}, 0, "svc sessions messages $sid") or diag $x->{err};
    my $m = eval { jdecode($x->{out})->{messages} } || [];
    is(scalar @$m, 2, "... $sid: both messages");
}
my $out = "$d/out";
mkdir $out or die;
my $x = svc($c, 'export', '--out', $out);
is($x->{rc}, 0, 'svc export: exit 0') or diag $x->{err};
like($x->{out}, qr/^exported 3 sessions, 6 messages, .*, 0 warnings: /, 'svc export: all, no warning');
$x = svc($c, 'chat', 'r2', 'more');
is($x->{rc}, 1, 'svc chat: exit 1');
like($x->{err}, qr/^svc: service_unavailable: .*read-only file system/im, 'svc chat: the reason');
is(state_of(), $before, 'the svc tool changed nothing on disk');

# a root that is missing, under a directory that cannot be written: named with its parent
{
    my $miss = "$ro/not/there";
    my $s2 = SvcTest->start(config => "sessions:\n  root: $miss\n");
    my $h2 = $s2->req(GET => '/api/health');
    is($h2->{status}, 503, 'a missing root that cannot be made: health 503');
    is_deeply($h2->{json}{reasons}, ["session root $miss: missing, and $ro cannot be written: Read-only file system"],
              'health: reasons names the root, the directory in the way and the error');
    my $t = $s2->req(POST => '/api/chat', body => { session_id => 'm1', messages => [{ role => 'user', content => 'x' }] });
    like($t->{json} && $t->{json}{error}{message}, qr/^session root \Q$miss\E: missing, and \Q$ro\E cannot be written/,
         'a turn: 503 names them too');
    like($s2->log, qr/session root \Q$miss\E: missing, and \Q$ro\E cannot be written: Read-only file system: reads go on/,
         'at start: in the log');
    $s2->stop;
}

system("umount $ro") == 0 or diag "umount: $?";
$mounted = 0;
done_testing();
