package SvcOps;
# Harness for the ops tests (t/5x-ops-*.t): svc-fcgi pools started directly (own socket,
# own log file), a private nginx with a configuration the test writes (the shipped nginx/
# files copied into its prefix, so a test can edit them as ops would), and a private
# Apache. Perl core modules only; builds on SvcTest (free_port, files, HTTP helpers).
#
#   my $p = SvcOps::pool(home => $h, sock => "$dir/a.sock", workers => 2, env => {...});
#   $p->{pid}, $p->{log} (path), SvcOps::slurp($p->{log}); SvcOps::stop_pid($p->{pid});
#   my $n = SvcOps::nginx(dir => $dir, server => "...", http => "...", edit => sub {...});
#   $n->{port}, $n->{prefix}; SvcOps::stop_pid($n->{pid});
#   my $r = SvcOps::http(GET => "http://127.0.0.1:$port/api/health", headers => {...});
use strict;
use warnings;

use File::Path qw(make_path);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Socket qw(MSG_NOSIGNAL);
use Time::HiRes qw(time sleep);
use SvcTest;

our $JSON = $SvcTest::JSON;
my @LIVE;

sub slurp { SvcTest::read_file($_[0]) // '' }

sub tmpdir {
    my $d = tempdir('svc-ops-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    chmod 0755, $d;
    return $d;
}

# Start svc-fcgi on unix:$o{sock} (or $o{listen}) with stderr to $o{log} (default
# $o{sock}.log). Waits for "master started". Returns {pid, log}; dies when it exits.
sub pool {
    my (%o) = @_;
    my $log = $o{log} // "$o{sock}.log";
    my @cmd = (SvcTest::fcgi_bin(), '--listen', $o{listen} // "unix:$o{sock}");
    push @cmd, '--workers', $o{workers} if $o{workers};
    push @cmd, '--config', $o{config} if $o{config};
    push @cmd, @{ $o{args} } if $o{args};
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        setpgrp(0, 0);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', '/dev/null';
        open STDERR, '>>', $log or POSIX::_exit(127);
        delete @ENV{qw(SVC_API_TOKEN SVC_CONFIG OPENAI_API_KEY)};
        $ENV{SVC_HOME} = $o{home} if $o{home};
        my $env = $o{env} || {};
        $ENV{$_} = $env->{$_} for keys %$env;
        exec @cmd or POSIX::_exit(127);
    }
    push @LIVE, $pid;
    my $ok = SvcTest::wait_for(20, sub {
        return 1 if slurp($o{watch} // $log) =~ /master started/;
        die "pool exited early:\n" . slurp($log) if waitpid($pid, WNOHANG) == $pid;
        0;
    });
    die "pool did not start:\n" . slurp($log) unless $ok;
    return { pid => $pid, log => $log, sock => $o{sock} };
}

# Run svc-fcgi to completion (for refusals): returns (exit code, stderr text).
sub run_fcgi {
    my ($env, @args) = @_;
    my $dir = tmpdir();
    my $pid = fork // die;
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/out";
        open STDERR, '>', "$dir/err";
        delete @ENV{qw(SVC_API_TOKEN SVC_CONFIG OPENAI_API_KEY LISTEN_FDS REQUEST_METHOD)};
        $ENV{$_} = $env->{$_} for keys %$env;
        exec SvcTest::fcgi_bin(), @args or POSIX::_exit(127);
    }
    my $deadline = time + 20;
    my $w;
    while (($w = waitpid($pid, WNOHANG)) == 0 && time < $deadline) { sleep 0.05 }
    if ($w == 0) { kill 'KILL', $pid; waitpid($pid, 0); return (-1, slurp("$dir/err")) }
    return ($? >> 8, slurp("$dir/err"));
}

# A private nginx on a free loopback port: nginx/ is copied to PREFIX/conf/svc (edit =>
# sub { my ($svcdir) = @_; ... } changes the copy), `http` goes at http level, `server` is
# the server block's body (default: the snippet and the JSON errors), `upstream` the
# servers of upstream svc_fcgi. Returns {pid, port, prefix}.
sub nginx {
    my (%o) = @_;
    my $prefix = $o{dir} // tmpdir();
    make_path("$prefix/conf", "$prefix/logs", "$prefix/tmp");
    system('cp', '-r', "$SvcTest::REPO/nginx", "$prefix/conf/svc") == 0 or die "cp nginx/";
    $o{edit}->("$prefix/conf/svc") if $o{edit};
    my $port = SvcTest::free_port();
    my $user = $> == 0 ? 'user root;' : '';
    my $ups = $o{upstream} // die 'nginx: upstream';
    my $server = $o{server} // "include svc/svc.conf;\ninclude svc/svc-errors.conf;\n";
    my $http = $o{http} // '';
    SvcTest::write_file("$prefix/conf/nginx.conf", <<"EOF");
$user
worker_processes 1;
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $prefix/tmp/client_body;
    proxy_temp_path $prefix/tmp/proxy;
    fastcgi_temp_path $prefix/tmp/fastcgi;
    uwsgi_temp_path $prefix/tmp/uwsgi;
    scgi_temp_path $prefix/tmp/scgi;
    default_type application/octet-stream;
    upstream svc_fcgi {
$ups
    }
$http
    server {
        listen 127.0.0.1:$port;
        server_name localhost;
$server
    }
}
EOF
    my $bin = -x '/usr/sbin/nginx' ? '/usr/sbin/nginx' : 'nginx';
    my $pid = fork // die;
    if ($pid == 0) {
        setpgrp(0, 0);
        open STDIN, '<', '/dev/null';
        open STDERR, '>>', "$prefix/logs/stderr.log";
        exec $bin, '-p', $prefix, '-c', "$prefix/conf/nginx.conf" or POSIX::_exit(127);
    }
    push @LIVE, $pid;
    my $up = SvcTest::wait_for(20, sub {
        return 0 if waitpid($pid, WNOHANG) == $pid && die "nginx exited:\n"
            . slurp("$prefix/logs/stderr.log") . slurp("$prefix/logs/error.log");
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 1);
        $s ? 1 : 0;
    });
    die "nginx did not start:\n" . slurp("$prefix/logs/error.log") unless $up;
    return { pid => $pid, port => $port, prefix => $prefix };
}

# {status, headers, body, json}
# The prefix mount of nginx/svc.conf's comment, on the copy in $svcdir (an nginx `edit`):
# the mount's capture to /svc and the dashboard's `location /` to /svc/. Returns the lines
# `diff -u` shows against the repository's svc.conf; then points the dashboard's alias at
# the repository's copy (the installed one is not here; not part of the documented edit).
sub edit_prefix_mount {
    my ($svcdir) = @_;
    my $t = SvcTest::read_file("$svcdir/svc.conf");
    $t =~ s/\Q(?<svc_base>)\E/(?<svc_base>\/svc)/ == 1 or die 'mount line not found';
    $t =~ s/^location \/ \{$/location \/svc\/ {/m or die 'dashboard location not found';
    SvcTest::write_file("$svcdir/svc.conf", $t);
    my @diff = grep { /^[-+][^-+]/ } split /\n/, `diff -u $SvcTest::REPO/nginx/svc.conf $svcdir/svc.conf`;
    $t =~ s{alias /etc/nginx/svc/dashboard/;}{alias $SvcTest::REPO/nginx/dashboard/;}
        or die 'alias not found';
    SvcTest::write_file("$svcdir/svc.conf", $t);
    return @diff;
}

sub http {
    my ($method, $url, %o) = @_;
    my %h = %{ $o{headers} || {} };
    my %args = (headers => \%h);
    if (exists $o{body}) {
        my $b = $o{body};
        if (ref $b) { $b = $JSON->encode($b); $h{'content-type'} //= 'application/json' }
        $args{content} = $b;
    }
    my $r = HTTP::Tiny->new(timeout => $o{timeout} // 30, keep_alive => 0)
        ->request($method, $url, \%args);
    my $json;
    $json = eval { $JSON->decode($r->{content}) } if defined $r->{content} && length $r->{content};
    SvcTest::record($method, $url, $r, $json);
    return { status => $r->{status}, headers => $r->{headers}, body => $r->{content},
             json => $json };
}

# TERM, wait (up to $timeout s, 30), KILL the group if still there. Returns the wait status.
sub stop_pid {
    my ($pid, $timeout) = @_;
    return unless $pid;
    kill 'TERM', $pid;
    my $deadline = time + ($timeout // 30);
    while (time < $deadline) {
        my $w = waitpid($pid, WNOHANG);
        if ($w == $pid || $w == -1) { @LIVE = grep { $_ != $pid } @LIVE; return $? }
        sleep 0.05;
    }
    kill 'KILL', -$pid;
    kill 'KILL', $pid;
    waitpid($pid, 0);
    @LIVE = grep { $_ != $pid } @LIVE;
    return $?;
}

# One FastCGI request straight to a pool, no web server: $peer is an IO::Socket::UNIX or
# ::INET peer (connected here), %params the CGI parameters, @parts the body sent in pieces,
# $between->($i) called after piece $i. The last piece closes stdin, unless it is undef
# (stdin left open: the worker answers without the whole body). Returns the stdout records'
# content, or undef when the connection broke before the end-request record.
sub fcgi_request {
    my ($sock, $params, $parts, $between) = @_;
    my $rec = sub { my ($type, $c) = @_; pack('CCnnCx', 1, $type, 1, length $c, 0) . $c };
    my $len = sub { my $n = shift; $n < 128 ? pack('C', $n) : pack('N', $n | 0x80000000) };
    my $nv = join '', map { $len->(length $_) . $len->(length $params->{$_}) . $_ . $params->{$_} }
        sort keys %$params;
    # MSG_NOSIGNAL: a worker that broke the connection is a result, not a SIGPIPE here
    my $put = sub { send($sock, $_[0], MSG_NOSIGNAL) };
    $put->($rec->(1, pack('nCx5', 1, 0)) . $rec->(4, $nv) . $rec->(4, ''));
    for my $i (0 .. $#$parts) {
        my $p = $parts->[$i] // last;
        $put->((length $p ? $rec->(5, $p) : '') . ($i == $#$parts ? $rec->(5, '') : ''));
        $between->($i) if $between;
    }
    my ($in, $out, $ended) = ('', '', 0);
    while (sysread($sock, my $buf, 65536)) { $in .= $buf }
    while (length $in >= 8) {
        my ($v, $type, $id, $clen, $plen) = unpack('CCnnC', $in);
        last if length $in < 8 + $clen + $plen;
        $out .= substr($in, 8, $clen) if $type == 6;
        $ended = 1 if $type == 3;
        substr($in, 0, 8 + $clen + $plen) = '';
    }
    return $ended ? $out : undef;
}

END { local $?; for my $p (@LIVE) { kill 'KILL', -$p; kill 'KILL', $p; waitpid($p, 0) } }

1;
