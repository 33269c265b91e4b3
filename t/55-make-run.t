#!/usr/bin/perl
# `make run` (issue 23, item 4): PORT= is honoured; a taken port is one line and a non-zero
# exit (before anything is built, and from scripts/serve when nginx cannot bind it); Ctrl-C
# at the terminal stops everything and make exits 0 without an error line. Free loopback
# ports only; the Ctrl-C goes through a real pseudo-terminal (python3's pty module).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use JSON::PP;
use Socket qw(AF_INET SOCK_STREAM inet_aton pack_sockaddr_in);
use SvcTest;

my $repo = SvcTest->repo;
my $B = SvcTest::build();
my $hooks = SvcTest::test_hooks_built() ? 'TEST_HOOKS=1' : '';
my $home = SvcTest->make_home('');
$ENV{SVC_HOME} = $home;
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
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
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
SKIP: {
    skip 'python3 missing', 6 unless `command -v python3 2>/dev/null`;
    my $p = SvcTest::free_port();
    my $res = do {
        my $j = `cd '$repo' && python3 -c '$py' $p make run B=$B $hooks PORT=$p`;
        eval { decode_json($j) } // { out => $j };
    };
    ok($res->{sent}, "make run PORT=$p started") or diag($res->{out});
    is($res->{health}, 200, "it serves on $p");
    is($res->{exit}, 0, 'Ctrl-C: make exits 0') or diag($res->{out});
    unlike($res->{out}, qr/make: \*\*\*/, 'no make error line') or diag($res->{out});
    unlike($res->{out}, qr/^serve: /m, 'no serve complaint') or diag($res->{out});
    ok(!IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p", Timeout => 2), 'nothing listens there any more');
}

done_testing;
