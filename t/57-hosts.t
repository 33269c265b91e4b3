#!/usr/bin/perl
# Several hosts on one shared root (SPEC 10), on a real distributed filesystem: a GlusterFS
# volume of two bricks mounted twice through FUSE (two clients with caches of their own,
# no inotify between them), one pool on each mount behind its own nginx, driven only
# through HTTP and the svc tool. Where glusterd or FUSE cannot run, the test fails with
# the reason (t/lib/Gluster.pm).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp ();
use POSIX ();
use Time::HiRes qw(time sleep);
use HTTP::Tiny;
use IO::Socket::INET;
use SvcTest;
use SvcCliTest qw(svc svc_bg svc_wait test_hooks_built);
use Gluster;
use SvcOps;

my $g = eval { Gluster->start };
unless ($g) {
    fail('a GlusterFS volume mounted twice through FUSE');
    diag $@;
    done_testing;
    exit 1;
}
my $J = $SvcTest::JSON;
my $hooks = test_hooks_built() && SvcTest::test_hooks_built();
my $clock = '2026-11-22T10:01:20Z';
my $yaml = sub {
    my ($mount) = @_;
    return "sessions:\n  root: $mount/root\n  fsync: true\n"
        . "jobs:\n  - id: tick\n    schedule: \"* * * * *\"\n    session_id: job-tick\n"
        . "    input: \"/slow 100 tick tock\"\n";
};
my %env = (SVC_PING_INTERVAL_S => 1, $hooks ? (SVC_TEST_JOBS_NOW => $clock) : ());
my $A = SvcTest->start(workers => 3, env => \%env, config => $yaml->($g->mount_a));
my $B = SvcTest->start(workers => 3, env => \%env, config => $yaml->($g->mount_b));
$g->before_stop(sub { $_->stop for grep { $_ } $A, $B });    # a test that dies: servers first
my $HA = { home => $A->home };
my $HB = { home => $B->home };

sub chat {
    my ($s, $sid, $text) = @_;
    return $s->req(POST => '/api/chat',
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub detail { $_[0]->req(GET => "/api/v1/chat/sessions/$_[1]")->{json} || {} }
sub msgs   { @{ $_[0]->req(GET => "/api/v1/chat/sessions/$_[1]/messages?limit=500")->{json}{messages} || [] } }
sub listed {
    my ($s, $sid) = @_;
    my ($e) = grep { $_->{session_id} eq $sid }
        @{ $s->req(GET => '/api/v1/chat/sessions?limit=500')->{json}{sessions} || [] };
    return $e;
}
sub msg_ids { map { $_->{message_id} // $_->{id} } msgs(@_) }

# ---- both hosts see a shared root ----
for my $h ([A => $A], [B => $B]) {
    my $hl = $h->[1]->req(GET => '/api/health')->{json} || {};
    is $hl->{sessions}{shared}, JSON::PP::true, "$h->[0]: health says the root is shared";
    is $hl->{sessions}{filesystem}, 'fuse', "$h->[0]: health names the filesystem kind";
}

# sessions.shared on and off override what the filesystem says
for my $c ([$g->mount_a . '/off-root', 'off', 'fuse', JSON::PP::false], [undef, 'on', undef, JSON::PP::true]) {
    my ($root, $mode, $fs, $want) = @$c;    # on: the default root, on a local disk
    my $s = SvcTest->start(config => "sessions:\n" . ($root ? "  root: $root\n" : '') . "  shared: $mode\n");
    my $hl = $s->req(GET => '/api/health')->{json} || {};
    is $hl->{sessions}{shared}, $want, "sessions.shared: $mode: health says shared " . ($want ? 'true' : 'false');
    is $hl->{sessions}{filesystem}, $fs, "sessions.shared: $mode: the filesystem is still named" if $fs;
    $s->stop;
}

# ---- a turn on A is read at once on B: detail, messages, list ----
is chat($A, 'h-one', 'hello from A')->{status}, 200, 'turn on A';
is detail($B, 'h-one')->{message_count}, 2, 'B: detail at once';
is scalar(msgs($B, 'h-one')), 2, 'B: messages at once';
is +(listed($B, 'h-one') || {})->{message_count}, 2, 'B: listed at once';
is chat($B, 'h-one', 'and from B')->{status}, 200, 'turn on B';
is detail($A, 'h-one')->{message_count}, 4, 'A: detail sees the turn of B';
is scalar(msgs($A, 'h-one')), 4, 'A: messages see the turn of B';
is +(listed($A, 'h-one') || {})->{message_count}, 4, 'A: list sees the turn of B';

# ---- a fork on A (a directory published without RENAME_NOREPLACE, which GlusterFS refuses) ----
{
    my $r = $A->req(POST => '/api/v1/chat/sessions/h-one/fork', body => { session_id => 'h-fork' });
    is $r->{status}, 201, 'fork on A: 201' or diag $r->{body};
    is detail($B, 'h-fork')->{message_count}, 4, 'B: the fork at once';
    $r = $B->req(POST => '/api/v1/chat/sessions/h-one/fork', body => { session_id => 'h-fork' });
    is_deeply [$r->{status}, ($r->{json}{error} || {})->{code}], [409, 'session_exists'], 'the same fork on B: 409, never replaced';
    is detail($A, 'h-fork')->{message_count}, 4, 'A: the fork kept';
}

# ---- turns racing on one session through both hosts ----
{
    my @kids;
    for my $i (1 .. 6) {
        my $s = $i % 2 ? $A : $B;
        my $pid = fork // die;
        if (!$pid) {
            my $r = chat($s, 'h-race', "/slow 20 racer $i");
            print STDERR "# racer $i: $r->{status} ", substr($r->{body} // '', 0, 300), "\n"
                unless $r->{status} == 200 || $r->{status} == 409;
            POSIX::_exit($r->{status} == 200 ? 0 : $r->{status} == 409 ? 1 : 2);
        }
        push @kids, $pid;
    }
    my %st;
    for (@kids) { waitpid $_, 0; $st{ $? >> 8 }++ }
    ok !$st{2}, 'racing turns: only 200 or 409' or diag explain \%st;
    ok $st{0}, 'racing turns: at least one won';
    my @ids = msg_ids($B, 'h-race');
    is scalar(@ids), 2 * ($st{0} // 0), 'racing turns: two messages per winner, none lost or doubled';
    is_deeply \@ids, [0 .. $#ids], 'racing turns: ids contiguous';
    is_deeply [msg_ids($A, 'h-race')], \@ids, 'racing turns: both hosts agree';
    my @tl = $B->turn_lines('h-race');
    is scalar(grep { !$_->{torn} } @tl), $st{0} // 0, 'racing turns: one whole turn line per winner';
    ok !(grep { $_->{torn} } @tl), 'racing turns: no torn line (appends from two mounts)';
}

# ---- a run started on A, followed and cancelled through B ----
{
    my $r = $A->req(POST => '/api/chat/runs', body => { session_id => 'h-run',
                    messages => [{ role => 'user', content => '/slow 150 ' . join(' ', 1 .. 60) }] });
    is $r->{status}, 202, 'run started on A' or diag $r->{body};
    my $rid = $r->{json}{run_id} // '';
    my $ev = $B->sse("/api/chat/runs/$rid/events?cursor=0", method => 'GET', timeout => 20,
                     stop_if => sub { @{ $_[0] } >= 3 });
    ok @{ $ev->{events} } >= 3, 'B follows the events of the run of A';
    is $B->req(POST => "/api/chat/runs/$rid/cancel")->{status}, 200, 'B cancels it';
    is $A->wait_run($rid)->{json}{status}, 'cancelled', 'A reports it cancelled';
    is $B->req(GET => "/api/chat/runs/$rid")->{json}{status}, 'cancelled', 'B too';
}

# ---- a Responses conversation continued across hosts ----
{
    my $r = $A->req(POST => '/api/v1/responses', body => { input => 'first', conversation => 'h-resp' });
    is $r->{status}, 200, 'response on A';
    $r = $B->req(POST => '/api/v1/responses', body => { input => 'second', previous_response_id => $r->{json}{id} });
    is $r->{status}, 200, 'continued on B by previous_response_id';
    like $r->{json}{output}[0]{content}[0]{text} // '', qr/second \(I was given 2 earlier/, 'B sees the turn of A';
    is $A->req(GET => "/api/v1/responses/$r->{json}{id}")->{status}, 200, 'A finds the response of B';
}

# ---- svc import --overwrite on the shared root ----
{
    my $tmp = File::Temp::tempdir(CLEANUP => 1);
    my $r = svc($HA, 'export', '--out', "$tmp/out", '--tar', '--session', 'h-one');
    is $r->{rc}, 0, 'export from A' or diag $r->{err};
    my ($bundle) = glob("$tmp/out/*.tar.gz");
    is chat($A, 'h-one', 'one more')->{status}, 200, 'one more turn after the export';
    $r = svc($HB, 'import', '--overwrite', $bundle // 'none');
    is $r->{rc}, 0, 'import --overwrite on B' or diag "$r->{out}$r->{err}";
    like $r->{out}, qr/imported 1 sessions?, skipped 0, failed 0/, 'one session imported';
    is detail($A, 'h-one')->{message_count}, 4, 'A reads the imported session at once';
    is scalar(msgs($A, 'h-one')), 4, 'A: its messages as exported';
}

# ---- an export bundle written onto the shared volume (no O_TMPFILE, no rename flags) ----
{
    my $dest = $g->mount_b . '/exports';
    mkdir $dest;
    my $r = svc($HB, 'export', '--out', $dest, '--tar', '--session', 'h-one');
    is $r->{rc}, 0, 'export onto the shared volume' or diag $r->{err};
    my @b = glob("$dest/*.tar.gz");
    is scalar(@b), 1, 'one bundle there, no temp file' or diag explain [glob("$dest/.* $dest/*")];
    is svc($HA, 'import', '--dry-run', $b[0] // 'none')->{rc}, 0, 'A reads the bundle B wrote';
}

# ---- svc jobs run-due on both hosts at once: the job runs once ----
SKIP: {
    skip 'SVC_TEST_JOBS_NOW needs a test build (make TEST_HOOKS=1)', 4 unless $hooks;
    my @b = map { svc_bg($_, { SVC_HOME => $_->{home}, SVC_TEST_JOBS_NOW => $clock }, 'jobs', 'run-due') }
        $HA, $HB;
    my @res = map {
        my $x = svc_wait($_);
        my ($t) = grep { $_->{id} eq 'tick' } @{ (eval { $J->decode($x->{out}) } || {})->{jobs} || [] };
        $t->{result} // 'none';
    } @b;
    is scalar(grep { $_ eq 'done' } @res), 1, "one host ran the job (@res)";
    for my $h ([A => $HA], [B => $HB]) {    # whichever lost, its host must know it ran
        my $x = svc($h->[1], { SVC_HOME => $h->[1]{home}, SVC_TEST_JOBS_NOW => '2026-11-22T10:01:50Z' },
                    'jobs', 'run-due');
        my ($t) = grep { $_->{id} eq 'tick' } @{ (eval { $J->decode($x->{out}) } || {})->{jobs} || [] };
        is $t->{result} // 'none', 'not_due', "$h->[0] later in the same minute: not due";
    }
    is detail($A, 'job-tick')->{run_count}, 1, 'one run on the job session';
}

# ---- a front nginx: one upstream listing both hosts, hashed by X-Session-Id ----
my $front = front_start($A, $B);
my %host = ($A->master_pid => 'A', $B->master_pid => 'B');
sub via_front {
    my ($method, $path, $sid, %o) = @_;
    my $r = HTTP::Tiny->new(timeout => 30)->request($method, "http://127.0.0.1:$front->{port}$path",
        { headers => { 'x-session-id' => $sid, 'content-type' => 'application/json' },
          exists $o{body} ? (content => $J->encode($o{body})) : () });
    $r->{json} = eval { $J->decode($r->{content}) };
    return $r;
}
sub served_by { $host{ (via_front(GET => '/api/health', $_[0])->{json} || {})->{pid} // 0 } // '?' }
my @fs = map { "h-front-$_" } 1 .. 8;
my %by = map { $_ => served_by($_) } @fs;
ok !(grep { $by{$_} eq '?' } @fs), 'front: every session answered by one of the hosts';
is scalar(grep { $by{$_} eq 'A' } @fs) > 0 && scalar(grep { $by{$_} eq 'B' } @fs) > 0, 1,
    'front: the hash spreads sessions over both hosts' or diag explain \%by;
is_deeply { map { $_ => served_by($_) } @fs }, \%by, 'front: a session stays on its host';
for my $sid (@fs) {
    via_front(POST => '/api/chat', $sid, body => { messages => [{ role => 'user', content => "one $sid" }] });
}
is_deeply [map { detail($B, $_)->{message_count} // 0 } @fs], [(2) x @fs], 'front: every turn stored once';

# ---- A SIGKILLed mid-stream: B reports interrupted and continues ----
{
    my $r = $A->req(POST => '/api/chat/runs', body => { session_id => 'h-kill',
                    messages => [{ role => 'user', content => '/slow 200 ' . join(' ', 1 .. 40) }] });
    my $rid = $r->{json}{run_id} // '';
    SvcTest::wait_for(10, sub { ($B->req(GET => "/api/chat/runs/$rid")->{json}{event_count} // 0) >= 2 });
    my $runner = detail($B, 'h-kill')->{current_run}{pid};
    ok $runner, 'B names the runner of A';
    kill 'KILL', -$A->{pid};    # the whole host: nginx, the pool and its workers
    kill 'KILL', $runner if $runner;
    SvcTest::wait_for(5, sub { !kill 0, $runner }) if $runner;
    $A->stop;
    $r = $B->wait_run($rid, 10);
    is $r->{json}{status}, 'error', 'B: the run of the dead host is an error';
    is $r->{json}{error}{code}, 'interrupted', 'B: interrupted';
    is chat($B, 'h-kill', 'after the crash')->{status}, 200, 'B continues the session';
    my @ids = msg_ids($B, 'h-kill');
    is_deeply \@ids, [0 .. $#ids], 'ids contiguous after the repair';
}

# ---- the front fails over: the sessions of A go to B, nothing lost ----
{
    my @st = map { via_front(POST => '/api/chat', $_, body => { messages => [{ role => 'user', content => "two $_" }] })->{status} } @fs;
    is_deeply \@st, [(200) x @fs], 'front after A died: every turn answered';
    is_deeply [map { served_by($_) } @fs], [('B') x @fs], 'front: B serves the sessions of A now';
    is_deeply [map { detail($B, $_)->{message_count} // 0 } @fs], [(4) x @fs], 'front: nothing lost, nothing doubled';
    front_stop($front);
}

# ---- svc fsck clean afterwards, from either mount ----
# a young temp file of a writer on another host (its pid is no process here) is not an orphan
my $young = $g->mount_a . '/root/session_h-one/.svc_session.json.tmp-4194000-0123abcd';
SvcTest::write_file($young, 'another host writes');
is svc($HB, 'fsck', '--repair')->{rc}, 0, 'fsck --repair with a young temp file of another host';
ok -e $young, 'the temp file of a writer on another host is left alone';
unlink $young;
for my $h ([B => $HB], [A => $HA]) {
    my $r = svc($h->[1], 'fsck');
    is $r->{rc}, 0, "fsck from $h->[0]: exit 0" or diag "$r->{out}$r->{err}";
    like $r->{out}, qr/ 0 problems/, "fsck from $h->[0]: no problem";
}

$B->stop;
$g->stop;
done_testing;

# The prefix of the nginx that scripts/serve started for host $s (its socket is svc.sock there).
sub serve_prefix {
    my ($s) = @_;
    for my $c (split ' ', SvcTest::read_file("/proc/$s->{pid}/task/$s->{pid}/children") // '') {
        (my $cmd = SvcTest::read_file("/proc/$c/cmdline") // '') =~ tr/\0/ /;
        return $1 if $cmd =~ /nginx.* -p (\S+)/;    # nginx writes its argv as one string
    }
    die "no nginx under serve $s->{pid}";
}

# A third nginx whose upstream lists both hosts' sockets, hashed by session, failing over.
sub front_start {
    my (@hosts) = @_;
    my $servers = join '', map { "        server unix:" . serve_prefix($_) . "/svc.sock;\n" } @hosts;
    return SvcOps::nginx(upstream => "        hash \$http_x_session_id consistent;\n$servers");
}

sub front_stop {
    my ($f) = @_;
    my $pid = delete $f->{pid} or return;
    SvcOps::stop_pid($pid);
}
END { front_stop($front) if $front }
