package RealMCP;
# The real MCP servers from npm (t/mcp: server-everything, server-filesystem) for the MCP
# tests: node and the packages (npm ci when they are missing, checked as a test), and
# server-everything over Streamable HTTP on a loopback port, stopped at exit.
#   my $node = RealMCP::node();  $RealMCP::EV, $RealMCP::FS, $RealMCP::DIR
#   my ($pid, $port) = RealMCP::everything_http($node);
use strict;
use warnings;
use IO::Socket::INET;
use POSIX ();
use Test::More;
use SvcTest;

our $DIR = SvcTest->repo . '/t/mcp';
my $MODS = "$DIR/node_modules/\@modelcontextprotocol";
our $EV = "$MODS/server-everything/dist/index.js";
our $FS = "$MODS/server-filesystem/dist/index.js";
my @PIDS;

sub node {
    my $node = `command -v node 2>/dev/null`;
    chomp $node;
    ok($node, 'node is installed (scripts/install-deps: nodejs)') or BAIL_OUT('no node');
    unless (-f $EV && -f $FS) {
        my $out = `cd '$DIR' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
        is($?, 0, 'npm ci installed the MCP servers') or diag($out);
    }
    return $node;
}

sub everything_http {
    my ($node) = @_;
    my $port = SvcTest::free_port();
    my $pid = fork // die;
    if (!$pid) {
        POSIX::setpgid(0, 0);
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        $ENV{PORT} = $port;
        exec $node, '--import', "$DIR/loopback.mjs", $EV, 'streamableHttp' or POSIX::_exit(127);
    }
    push @PIDS, $pid;
    ok(SvcTest::wait_for(20, sub { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") }),
       'server-everything listens over Streamable HTTP');
    return ($pid, $port);
}

END { local $?; for my $p (@PIDS) { kill 'TERM', -$p; waitpid $p, 0 } }

1;
