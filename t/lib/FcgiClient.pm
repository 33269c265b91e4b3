package FcgiClient;
# A raw FastCGI client (the protocol's responder role, one request a connection), with the
# source address chosen: what an attacker on the network, or another process on the host,
# would send to svc-fcgi's port without a web server in between.
#
#   my $res = FcgiClient::request(to => '127.0.0.1:9000', from => '127.0.0.2',
#                                 params => { REQUEST_METHOD => 'GET', REQUEST_URI => '/api/health' },
#                                 body => '');
#   # {status, headers, body, bytes} or {closed => 1, bytes => 0} when the server closed
#   # the connection without answering
#   FcgiClient::closed_unread(to => ..., from => ...)   # 1 when the server closes a
#                                                       # connection on which nothing was sent
# `to` is HOST:PORT ([V6]:PORT) or a unix socket path. Perl core modules only.
use strict;
use warnings;
use IO::Select;
use IO::Socket::IP;
use IO::Socket::UNIX;

sub _connect {
    my (%o) = @_;
    return IO::Socket::UNIX->new(Peer => $o{to}) if $o{to} =~ m{^/};
    my ($host, $port) = $o{to} =~ /^\[?(.*?)\]?:(\d+)$/ or die "FcgiClient: bad address $o{to}";
    return IO::Socket::IP->new(PeerHost => $host, PeerPort => $port,
                               $o{from} ? (LocalHost => $o{from}) : (), Timeout => 5);
}

sub _record {
    my ($type, $content) = @_;
    my $pad = (8 - length($content) % 8) % 8;
    return pack('CCnnCC', 1, $type, 1, length $content, $pad, 0) . $content . ("\0" x $pad);
}

sub _len { my $n = length $_[0]; $n < 128 ? pack('C', $n) : pack('N', $n | 0x80000000) }

# Read until the end-request record or the close; ($stdout, $bytes read).
sub _read_all {
    my ($s, $timeout) = @_;
    my ($buf, $out, $bytes) = ('', '', 0);
    my $sel = IO::Select->new($s);
    while ($sel->can_read($timeout)) {
        my $n = sysread($s, $buf, 65536, length $buf);
        last if !$n;
        $bytes += $n;
        while (length $buf >= 8) {
            my ($v, $type, $id, $len, $pad) = unpack('CCnnC', $buf);
            last if length $buf < 8 + $len + $pad;
            my $c = substr($buf, 8, $len);
            substr($buf, 0, 8 + $len + $pad) = '';
            $out .= $c if $type == 6;
            return ($out, $bytes) if $type == 3;
        }
    }
    return ($out, $bytes);
}

sub request {
    my (%o) = @_;
    my $s = _connect(%o) or return { error => "connect: $@" };
    my $params = '';
    my %p = %{ $o{params} || {} };
    $params .= _len($_) . _len($p{$_}) . $_ . $p{$_} for sort keys %p;
    my $body = $o{body} // '';
    my $msg = _record(1, pack('nCx5', 1, 0)) . _record(4, $params) . _record(4, '');
    $msg .= _record(5, substr($body, $_ * 32768, 32768)) for 0 .. int((length($body) - 1) / 32768);
    $msg .= _record(5, '');
    local $SIG{PIPE} = 'IGNORE';
    syswrite($s, $msg);
    my ($out, $bytes) = _read_all($s, $o{timeout} // 10);
    close $s;
    return { closed => 1, bytes => $bytes } if $out eq '';
    my ($head, $rest) = split /\r?\n\r?\n/, $out, 2;
    my %h = map { my ($k, $v) = /^([^:]+):\s*(.*)$/; (lc $k => $v) } split /\r?\n/, $head;
    my ($status) = ($h{status} // '200') =~ /^(\d+)/;
    return { status => $status, headers => \%h, body => $rest // '', bytes => $bytes };
}

# Whether the server closes a connection from `from` on which nothing was sent within
# `wait` seconds (a refused peer is closed at once; an allowed one waits for its request).
sub closed_unread {
    my (%o) = @_;
    my $s = _connect(%o) or return undef;
    my $sel = IO::Select->new($s);
    my $closed = 0;
    if ($sel->can_read($o{wait} // 1)) {
        my $buf;
        my $n = sysread($s, $buf, 1);
        $closed = defined $n && $n == 0 || !defined $n ? 1 : 0;
    }
    close $s;
    return $closed;
}

1;
