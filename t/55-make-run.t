#!/usr/bin/perl
# `make run` (issue 23, item 4): PORT= is honoured; a taken port is one line and a non-zero
# exit (before anything is built, and from scripts/serve when nginx cannot bind it); Ctrl-C
# at the terminal stops everything and make exits 0 without an error line. Free loopback
# ports only; the Ctrl-C goes through a real pseudo-terminal (python3's pty module).
# However started (issue 35, item 9): with SIGINT ignored from the start, as `make run &`,
# nohup or a `make test &` give it, Ctrl-C, SIGINT and SIGTERM still stop it with exit 0;
# nothing is left in its temporary directory (TMPDIR is the test's own, checked empty).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use JSON::PP;
use File::Temp ();
use POSIX ();
use Socket qw(AF_INET SOCK_STREAM inet_aton pack_sockaddr_in);
use Time::HiRes qw(sleep time);
use SvcTest;

my $repo = SvcTest->repo;
my $B = SvcTest::build();
my $hooks = SvcTest::test_hooks_built() ? 'TEST_HOOKS=1' : '';
my $home = SvcTest->make_home('');
$ENV{SVC_HOME} = $home;
my $tmp = File::Temp::tempdir('svc-55-XXXXXX', TMPDIR => 1, CLEANUP => 1);
$ENV{TMPDIR} = $tmp;    # serve's prefixes go here: none may be left
delete @ENV{qw(SVC_CONFIG MAKEFLAGS MAKELEVEL)};

# stdout and stderr of a command in the repository, and its exit code
sub run {
    my ($cmd) = @_;
    my $out = `cd '$repo' && timeout 60 $cmd 2>&1 </dev/null`;
    return ($out, $? >> 8);
}
sub lines { grep { length } split /\n/, $_[0] }

# a port something listens on
{
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1)
        or die "listen: $!";
    my $p = $l->sockport;
    my ($out, $rc) = run("make run B=$B $hooks PORT=$p");
    isnt($rc, 0, "make run on a taken port: non-zero exit ($rc)");
    is(scalar(lines($out)), 1, 'one line') or diag($out);
    like($out, qr/port $p is taken.*make run PORT=\d+/, 'it says what to do') or diag($out);

    ($out, $rc) = run("scripts/serve --port $p");
    is($rc, 1, 'scripts/serve on a taken port: exit 1');
    is(scalar(lines($out)), 1, 'one line') or diag($out);
}

# a port bound by another socket without listening: the check passes, nginx cannot bind it;
# one line from serve instead of nginx's bind errors
{
    socket(my $sk, AF_INET, SOCK_STREAM, 0) or die "socket: $!";
    my $p = SvcTest::free_port();
    bind($sk, pack_sockaddr_in($p, inet_aton('127.0.0.1'))) or die "bind: $!";
    my ($out, $rc) = run("env SVC_BUILD=$B scripts/serve --port $p");
    is($rc, 1, 'nginx cannot bind: exit 1');
    my @serve = grep { /^serve:/ } lines($out);
    is(scalar @serve, 1, 'one serve line') or diag($out);
    like($serve[0] // '', qr/port $p is taken/, 'the taken-port line');
    unlike($out, qr/bind\(\)|nginx:/, "none of nginx's bind errors") or diag($out);
}

# PORT= honoured, then Ctrl-C on the terminal: make exits 0, nothing left listening
my $py = <<'EOF';
import json, os, pty, select, sys, time, urllib.request
port = sys.argv[1]
import signal
ignore = sys.argv[2] == "ignore"
argv = sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    if ignore:  # as a shell starts a background job, or nohup
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.execvp(argv[0], argv)
out, start, sent, health = b"", time.time(), False, None
while time.time() - start < 60:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    if not sent and b"svc: listening on http://127.0.0.1:" + port.encode() in out:
        try:
            health = urllib.request.urlopen("http://127.0.0.1:%s/api/health" % port, timeout=5).status
        except Exception as e:
            health = str(e)
        os.write(fd, b"\x03")
        sent = True
else:
    os.kill(pid, 9)
_, st = os.waitpid(pid, 0)
print(json.dumps({"out": out.decode(errors="replace"), "exit": os.waitstatus_to_exitcode(st),
                  "health": health, "sent": sent}))
EOF
for my $mode ('default', 'ignore') {
SKIP: {
    skip 'python3 missing', 6 unless `command -v python3 2>/dev/null`;
    my $p = SvcTest::free_port();
    my $res = do {
        my $j = `cd '$repo' && python3 -c '$py' $p $mode make run B=$B $hooks PORT=$p`;
        eval { decode_json($j) } // { out => $j };
    };
    my $how = $mode eq 'ignore' ? ' (SIGINT ignored from the start, as in the background)' : '';
    ok($res->{sent}, "make run PORT=$p started$how") or diag($res->{out});
    is($res->{health}, 200, "it serves on $p$how");
    is($res->{exit}, 0, "Ctrl-C: make exits 0$how") or diag($res->{out});
    unlike($res->{out}, qr/make: \*\*\*/, "no make error line$how") or diag($res->{out});
    unlike($res->{out}, qr/^serve: /m, "no serve complaint$how") or diag($res->{out});
    ok(!IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p", Timeout => 2), "nothing listens there any more$how");
}
}

# Started without a terminal, SIGINT ignored (`make run &` in a script, nohup), then a
# signal: to the process group (make ignores SIGINT and waits for serve), or to serve.
sub started {
    my (@cmd) = @_;
    my $p = SvcTest::free_port();
    s/\@PORT\@/$p/g for @cmd;
    pipe(my $r, my $w) or die;
    my $pid = fork // die;
    if (!$pid) {
        setpgrp(0, 0);
        close $r;
        open STDOUT, '>&', $w;
        open STDERR, '>&', $w;
        open STDIN, '<', '/dev/null';
        $SIG{INT} = 'IGNORE';
        chdir $repo;
        exec @cmd or POSIX::_exit(127);
    }
    close $w;
    my ($out, $t) = ('', time);
    while (time - $t < 60 && $out !~ /svc: listening on/) { sysread($r, $out, 4096, length $out) or last }
    return { pid => $pid, port => $p, r => $r, out => $out };
}
sub ended {
    my ($x) = @_;
    my $t = time;
    my $w;
    sleep 0.05 until ($w = waitpid($x->{pid}, POSIX::WNOHANG())) || time - $t > 30;
    kill 'KILL', -$x->{pid} unless $w;
    local $/;
    my $r = $x->{r};
    $x->{out} .= <$r> // '';
    return $w ? $? : -1;
}
my $serve_of = sub {    # the bash running scripts/serve under make (make's child, through exec)
    my ($x) = @_;
    my ($pid) = `pgrep -g $x->{pid} -f 'scripts/serve --port $x->{port}'` =~ /(\d+)/;
    return $pid;
};
for my $c (['make run', 'INT', 'the group'], ['make run', 'INT', 'serve'], ['make run', 'TERM', 'serve'],
           ['scripts/serve', 'INT', 'serve'], ['scripts/serve', 'TERM', 'serve'], ['scripts/serve', 'INT', 'the group']) {
    my ($what, $sig, $to) = @$c;
    my $x = $what eq 'make run' ? started('make', '--no-print-directory', 'run', "B=$B", ($hooks ? $hooks : ()), 'PORT=@PORT@')
                                : started('env', "SVC_BUILD=$B", 'scripts/serve', '--port', '@PORT@');
    like($x->{out}, qr/svc: listening on/, "$what, SIGINT ignored from the start: serving") or diag($x->{out});
    my $target = $to eq 'the group' ? -$x->{pid} : $what eq 'make run' ? $serve_of->($x) : $x->{pid};
    ok($target, "$what: found whom to signal") or do { kill 'TERM', -$x->{pid}; ended($x); next };
    kill $sig, $target;
    is(ended($x), 0, "$what, SIG$sig to $to: exit 0") or diag($x->{out});
    unlike($x->{out}, qr/^serve: |make: \*\*\*/m, "$what, SIG$sig to $to: no complaint") or diag($x->{out});
    ok(!IO::Socket::INET->new(PeerAddr => "127.0.0.1:$x->{port}", Timeout => 2), "$what, SIG$sig to $to: nothing listens");
}

opendir(my $dh, $tmp) or die;
my @left = grep { /^svc-serve\./ } readdir $dh;
is_deeply(\@left, [], 'no temporary directory of serve left behind')
    or diag(map { "$_: " . join(' ', map { s{^\Q$tmp\E/}{}r } glob("$tmp/$_/* $tmp/$_/conf/*.conf")) . "\n" } @left);

done_testing;
