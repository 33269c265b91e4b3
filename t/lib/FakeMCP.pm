package FakeMCP;
# A small MCP server over Streamable HTTP that answers in plain JSON (not SSE) and logs what
# it receives, for the parts of the protocol the npm servers do not show: the headers a
# client sends, tools/list pages (nextCursor), a session that ends on the server's side
# (404, the client must initialize again). Core modules only; one process, one connection
# at a time, on 127.0.0.1 and a free port.
#
#   my $m = FakeMCP->start;      $m->url;   # "http://127.0.0.1:PORT/mcp"
#   $m->requests;                # [{method, headers => {lc name => value}, body}, ...]
#   $m->expire;                  # forget the session: the next request gets 404
#   $m->stop;
# Tools: "one" answers "one: <arguments as JSON>" (first page of tools/list), "two" answers
# an error result (isError, second page).
use strict;
use warnings;
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();
use File::Temp ();

my $J = JSON::PP->new->utf8->canonical->allow_nonref;

sub start {
    my ($class) = @_;
    my ($fh, $log) = File::Temp::tempfile('fakemcp-XXXXXX', TMPDIR => 1, UNLINK => 1);
    close $fh;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp',
                                    Listen => 16, ReuseAddr => 1) or die "FakeMCP: $!";
    my $port = $srv->sockport;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        POSIX::setpgid(0, 0);
        $SIG{PIPE} = 'IGNORE';
        my ($n, $session) = (0, '');
        $SIG{USR1} = sub { $session = 'expired' };
        while (1) {
            my $c = $srv->accept or next;
            eval { _serve($c, $log, \$n, \$session) };
            close $c;
        }
    }
    close $srv;
    return bless { pid => $pid, port => $port, log => $log }, $class;
}

sub url { "http://127.0.0.1:$_[0]{port}/mcp" }

sub requests {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or return [];
    return [ map { chomp; $J->decode($_) } grep { /\S/ } <$fh> ];
}

sub expire { kill 'USR1', $_[0]{pid}; select(undef, undef, undef, 0.1) }

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'KILL', $pid;
    waitpid $pid, 0;
}

sub DESTROY { $_[0]->stop }

sub _reply {
    my ($c, $status, $body, %h) = @_;
    my $text = defined $body ? $J->encode($body) : '';
    my $head = "HTTP/1.1 $status X\r\nConnection: close\r\nContent-Length: " . length($text) . "\r\n";
    $head .= "Content-Type: application/json\r\n" if defined $body;
    $head .= "$_: $h{$_}\r\n" for sort keys %h;
    print $c "$head\r\n$text";
}

sub _serve {
    my ($c, $log, $n, $session) = @_;
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        sysread($c, $buf, 65536, length $buf) or return;
    }
    my ($head, $body) = split /\r\n\r\n/, $buf, 2;
    my ($method) = $head =~ /^(\S+)/;
    my %h = map { /^([^:]+):\s*(.*?)\s*$/ ? (lc $1 => $2) : () } split /\r\n/, $head;
    while (length $body < ($h{'content-length'} // 0)) {
        sysread($c, $body, 65536, length $body) or last;
    }
    my $msg = length $body ? eval { $J->decode($body) } : undef;
    open my $lf, '>>', $log or die;
    print $lf $J->encode({ method => $method, headers => \%h, body => $msg }), "\n";
    close $lf;
    return _reply($c, 200, undef) if $method eq 'DELETE';
    if (($msg->{method} // '') eq 'initialize') {
        $$session = 'sess-' . ++$$n;
        return _reply($c, 200, { jsonrpc => '2.0', id => $msg->{id}, result => {
            protocolVersion => '2025-06-18', capabilities => { tools => {} },
            serverInfo => { name => 'fake', version => '1' } } }, 'Mcp-Session-Id' => $$session);
    }
    return _reply($c, 404, { jsonrpc => '2.0', error => { code => -32001, message => 'no session' } })
        if ($h{'mcp-session-id'} // '') ne $$session;
    return _reply($c, 202, undef) unless defined $msg->{id};
    my $p = $msg->{params} // {};
    my $tool = sub { { name => $_[0], description => "fake $_[0]", inputSchema => { type => 'object' } } };
    my $result = ($msg->{method} // '') eq 'tools/list'
        ? ($p->{cursor} ? { tools => [ $tool->('two') ] } : { tools => [ $tool->('one') ], nextCursor => 'page2' })
        : ($p->{name} // '') eq 'one'
        ? { content => [ { type => 'text', text => 'one: ' . $J->encode($p->{arguments} // {}) } ] }
        : { content => [ { type => 'text', text => 'two always fails' } ], isError => JSON::PP::true };
    _reply($c, 200, { jsonrpc => '2.0', id => $msg->{id}, result => $result });
}

1;
