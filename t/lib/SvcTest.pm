package SvcTest;
# Integration-test harness: a throwaway SVC_HOME, scripts/serve on a free loopback port
# (svc-fcgi behind a private nginx), and small HTTP helpers. Perl core modules only.
#
#   my $s = SvcTest->start(config => "server:\n  workers: 2\n", workers => 2, env => {...});
#   (pools => 2: two svc-fcgi pools on one root behind one nginx upstream; $s->pool_pids)
#   my $res = $s->req(GET => '/api/health');          # {status, headers, body, json}
#   my $res = $s->req(POST => '/api/chat', body => {...}, headers => {...});
#   my $sse = $s->sse('/api/chat', body => {...});     # {status, headers, events, comments}
#   $s->home; $s->root; $s->log; $s->master_pid; $s->stop;
#
# With SVC_ANSWERS=DIR (make test sets it), every answer req, sse and SvcOps::http get is
# recorded in DIR/<pid>.jsonl (method, path, status, content type, a JSON body), and
# t/openapi/answers.t validates them against docs/openapi.yaml after the suite.
#
# agents.yaml gets `sessions: fsync: false` unless the config sets fsync itself, and
# `sessions: cache: off` when SVC_TEST_CACHE=off (the suite with every cache off, CI).
# The server runs in its own process group and is stopped in stop(), DESTROY and END; its
# temporary files (serve's nginx prefix among them) are made in a directory of its own
# (TMPDIR), removed with the test, so even one stop() had to kill leaves nothing in /tmp.
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path ();
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(WNOHANG);
use Time::HiRes qw(time sleep);

our $REPO = abs_path(dirname(__FILE__) . '/../..');
our $JSON = JSON::PP->new->utf8->canonical->allow_nonref;
my %LIVE;

sub repo  { $REPO }
sub build { $ENV{SVC_BUILD} || "$REPO/build" }
sub fcgi_bin { build() . '/svc-fcgi' }

# Whether svc-fcgi carries the test hooks (make TEST_HOOKS=1; `make test` builds so).
sub test_hooks_built { binary_has(fcgi_bin(), 'SVC_TEST_JOBS_NOW') }
sub binary_has {
    my ($path, $marker) = @_;
    open my $fh, '<:raw', $path or return 0;
    local $/;
    return index(<$fh>, $marker) >= 0;
}

# A loopback port nobody listens on right now.
sub free_port {
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1,
                                  ReuseAddr => 1) or die "free_port: $!";
    my $p = $s->sockport;
    close $s;
    return $p;
}

# A fresh SVC_HOME (removed at exit) with agents.yaml written from $yaml.
sub make_home {
    my ($class, $yaml) = @_;
    my $home = tempdir('svc-test-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    write_file("$home/agents.yaml", with_defaults($yaml // ''));
    return $home;
}

sub with_defaults {
    my ($y) = @_;
    $y = with_session_key($y, 'fsync', 'false');
    $y = with_session_key($y, 'cache', 'off') if cache_off();
    return $y;
}

# Whether the suite runs with every process cache off (SVC_TEST_CACHE=off).
sub cache_off { ($ENV{SVC_TEST_CACHE} // '') eq 'off' }

# $y with `key: value` under sessions: unless some line already sets key.
sub with_session_key {
    my ($y, $key, $value) = @_;
    return $y if $y =~ /^[ \t]+\Q$key\E[ \t]*:/m;
    if ($y =~ /^sessions:[ \t]*\n([ \t]+)/m) {
        my $ind = $1;
        $y =~ s/^sessions:[ \t]*\n/sessions:\n${ind}$key: $value\n/m;
    } elsif ($y =~ /^sessions:[ \t]*\{/m) {
        $y =~ s/^sessions:[ \t]*\{/sessions: {$key: $value, /m;
    } elsif ($y !~ /^sessions:/m) {
        $y .= "\n" if length $y && $y !~ /\n\z/;
        $y .= "sessions:\n  $key: $value\n";
    }
    return $y;
}

sub write_file {
    my ($path, $text) = @_;
    open my $fh, '>', $path or die "write $path: $!";
    print $fh $text;
    close $fh or die "close $path: $!";
}

# Every file under $d (not directories; a symbolic link is listed, never followed), sorted.
sub files_under {
    my ($d) = @_;
    my @out;
    my @todo = ($d);
    while (my $x = shift @todo) {
        opendir(my $dh, $x) or next;
        for my $e (grep { !/^\.\.?$/ } readdir $dh) {
            my $p = "$x/$e";
            if (-d $p && !-l $p) { push @todo, $p } else { push @out, $p }
        }
    }
    return sort @out;
}

sub read_file {
    my ($path) = @_;
    open my $fh, '<', $path or return undef;
    local $/;
    my $t = <$fh>;
    close $fh;
    return $t;
}

sub start {
    my ($class, %o) = @_;
    $o{home} ||= $class->make_home($o{config});
    # free_port() can race with another test grabbing the same port: retry on EADDRINUSE
    for my $try (1 .. 3) {
        my $s = eval { $class->_start_once(%o) };
        return $s if $s;
        die $@ unless $try < 3 && $@ =~ /Address already in use|serve: port \d+ is taken/;
    }
}

sub _start_once {
    my ($class, %o) = @_;
    my $home = $o{home};
    my $port = free_port();
    my $log = "$home/serve.log";
    unlink $log;
    my $tmp = tempdir('svc-tmp-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my @cmd = ("$REPO/scripts/serve", '--port', $port, '--home', $home,
               '--config', "$home/agents.yaml");
    push @cmd, '--workers', $o{workers} if $o{workers};
    push @cmd, '--pools', $o{pools} if $o{pools};

    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        setpgrp(0, 0);
        close $rd;
        open STDIN, '<', '/dev/null';
        open STDOUT, '>&', $wr or POSIX::_exit(127);
        open STDERR, '>>', $log or POSIX::_exit(127);
        delete @ENV{qw(SVC_API_TOKEN SVC_CONFIG OPENAI_API_KEY)};
        $ENV{SVC_HOME} = $home;
        $ENV{SVC_BUILD} = build();
        # serve's prefix (and the pool's temporary files) in a directory that goes with the
        # test: a server stop() had to kill leaves no svc-serve.* in /tmp
        $ENV{TMPDIR} = $tmp;
        my $env = $o{env} || {};
        $ENV{$_} = $env->{$_} for keys %$env;
        exec @cmd or POSIX::_exit(127);
    }
    close $wr;
    my $self = bless { pid => $pid, port => $port, home => $home, log => $log, out => $rd, tmp => $tmp,
                       http => HTTP::Tiny->new(timeout => 30, keep_alive => 0) }, $class;
    $LIVE{$pid} = $self;

    my $sel = IO::Select->new($rd);
    my $buf = '';
    my $deadline = time + 20;
    while (time < $deadline) {
        last if $buf =~ /svc: listening on http:\/\/127\.0\.0\.1:(\d+)/;
        if ($sel->can_read(0.1)) {
            my $n = sysread($rd, $buf, 4096, length $buf);
            last if !$n;
        }
        last if waitpid($pid, WNOHANG) == $pid && do { delete $self->{pid}; 1 };
    }
    unless ($buf =~ /svc: listening on http:\/\/127\.0\.0\.1:$port\b/) {
        $self->stop;
        die "SvcTest: serve did not start (stdout: '$buf')\n--- serve stderr ---\n"
            . (read_file($log) // '') . "\n";
    }
    return $self;
}

sub home { $_[0]{home} }
sub port { $_[0]{port} }
sub url  { my ($s, $p) = @_; "http://127.0.0.1:$s->{port}" . ($p // '') }
sub log  { read_file($_[0]{log}) // '' }

# The session root: sessions.root from agents.yaml when set, else the default under home.
# Run t/node/SCRIPT against base (the API's /api/v1 URL) with token (npm ci first when the
# pinned packages are missing): each JSON line {ok, name, diag} it prints becomes a test;
# returns its {end} line (a hash), or undef when it did not reach it.
sub node_checks {
    my ($class, $script, $base, $token) = @_;
    my $dir = repo() . '/t/node';
    unless (-d "$dir/node_modules/openai") {
        my $out = `cd '$dir' && npm ci --no-audit --no-fund --loglevel=error 2>&1`;
        Test::More::is($?, 0, 'npm ci installed the client packages') or Test::More::diag($out);
    }
    my $raw = `cd '$dir' && SVC_BASE='$base' SVC_TOKEN='$token' timeout 300 node $script 2>&1`;
    Test::More::is($? >> 8, 0, "node $script exited 0") or Test::More::diag($raw);
    my $end;
    for my $line (split /\n/, $raw) {
        my $o = eval { JSON::PP::decode_json($line) };
        if (ref $o eq 'HASH' && exists $o->{ok}) {
            Test::More::ok($o->{ok} ? 1 : 0, $o->{name}) or Test::More::diag($o->{diag});
        } elsif (ref $o eq 'HASH' && $o->{end}) {
            $end = $o;
        } else {
            Test::More::diag("node: $line");
        }
    }
    return $end;
}

# Every file under the session root, names and sizes, one a line: "nothing changed on disk".
# Lock files are left out (a reader may create them), and names matching $skip (a regex).
sub snapshot {
    my ($s, $skip) = @_;
    my @out;
    my @todo = ($s->root);
    while (my $d = shift @todo) {
        opendir my $h, $d or next;
        for (sort grep { !/^\.\.?$/ } readdir $h) {
            my $p = "$d/$_";
            next if /^\.svc\.(run\.)?lock$/ || ($skip && $_ =~ $skip);
            if (-d $p && !-l $p) { push @todo, $p; push @out, "$p/" }
            else { push @out, "$p " . (-s $p // 0) }
        }
    }
    return join "\n", sort @out;
}

sub root {
    my ($s) = @_;
    my $y = read_file("$s->{home}/agents.yaml") // '';
    if ($y =~ /^sessions:[ \t]*\n((?:[ \t]+.*\n?|\s*\n)*)/m) {
        my $blk = $1;
        if ($blk =~ /^[ \t]+root:[ \t]*["']?([^"'\n]+?)["']?[ \t]*$/m) {
            my $r = $1;
            $r =~ s/^~/$ENV{HOME}/;
            return $r;
        }
    }
    return "$s->{home}/agents/native_sessions";
}

# {status, headers, body, json}. body: a ref is sent as JSON, a string as it is; either
# as application/json unless headers name another content-type (undef: HTTP::Tiny's own).
sub req {
    my ($s, $method, $path, %o) = @_;
    my %h = %{ $o{headers} || {} };
    my %args = (headers => \%h);
    if (exists $o{body}) {
        my $b = $o{body};
        $b = $JSON->encode($b) if ref $b;
        $h{'content-type'} = 'application/json' unless exists $h{'content-type'};
        delete $h{'content-type'} unless defined $h{'content-type'};
        $args{content} = $b;
    }
    my $r = $s->{http}->request($method, $s->url($path), \%args);
    my $json;
    $json = eval { $JSON->decode($r->{content}) } if defined $r->{content} && length $r->{content};
    record($method, $s->url($path), $r, $json);
    return { status => $r->{status}, headers => $r->{headers}, body => $r->{content},
             json => $json };
}

# The stored messages of a session's default agent, in order (each file's "message"; the
# string 'unparsable' for a file that is not JSON).
sub stored {
    my ($s, $sid) = @_;
    my $d = $s->root . "/session_$sid/agents/agent_svc-agent/messages";
    opendir my $dh, $d or return [];
    my @ids = sort { $a <=> $b } map { /^message_(\d+)\.json$/ ? $1 : () } readdir $dh;
    return [ map { (eval { $JSON->decode(read_file("$d/message_$_.json")) } // { message => 'unparsable' })
                   ->{message} } @ids ];
}

# One user message to POST /api/chat in session $sid (more of the body in %body).
sub chat {
    my ($s, $sid, $text, %body) = @_;
    return $s->req(POST => '/api/chat',
                   body => { session_id => $sid, messages => [{ role => 'user', content => $text }], %body });
}

# Checks that $r is the refusal ($status, error code, param when defined) and, given the
# snapshot taken before (its .svc_index files left out), that nothing changed on disk.
sub refused {
    my ($s, $r, $status, $code, $param, $name, $before) = @_;
    Test::More::is($r->{status}, $status, "$name: $status") or Test::More::diag($r->{body});
    Test::More::is($r->{json}{error}{code}, $code, "$name: $code");
    Test::More::is($r->{json}{error}{param}, $param, "$name: param $param") if defined $param;
    Test::More::is($s->snapshot(qr/^\.svc_index/), $before, "$name: nothing changed on disk")
        if defined $before;
}

# req with "Authorization: Bearer $token" added to the headers.
sub req_as {
    my ($s, $token, $method, $path, %o) = @_;
    $o{headers} = { %{ $o{headers} || {} }, authorization => "Bearer $token" };
    return $s->req($method, $path, %o);
}

# start's env and config for server.users: each id => token, the token in TOK_<ID>; an id
# ending in '!' is an admin. Extra YAML after the users block.
sub users {
    my ($tok, $extra) = @_;
    my (%env, $yaml);
    for my $who (sort keys %$tok) {
        (my $id = $who) =~ s/!$//;
        $env{ 'TOK_' . uc $id } = $tok->{$who};
        $yaml .= "    - {id: $id, token_env: TOK_" . uc($id) . ($id ne $who ? ', role: admin' : '') . "}\n";
    }
    return (env => \%env, config => "server:\n  users:\n$yaml" . ($extra // ''));
}

# One answer into $SVC_ANSWERS/<pid>.jsonl when that is set (see the top): HTTP::Tiny's
# own failures (599: no answer) are left out, and bodies that are not JSON.
sub record {
    my ($method, $url, $r, $json) = @_;
    my $dir = $ENV{SVC_ANSWERS} or return;
    return if ($r->{status} // 599) == 599;
    my ($path) = $url =~ m{^https?://[^/]+(/[^?#]*)};
    my $ct = $r->{headers}{'content-type'} // '';
    $ct = $ct->[0] if ref $ct;
    my %rec = (test => $0, method => $method, path => $path // $url, status => 0 + $r->{status},
               content_type => $ct);
    $rec{body} = $json if defined $json && $ct =~ m{^application/(?:[\w.+-]*\+)?json};
    mkdir $dir;
    open my $fh, '>>', "$dir/$$.jsonl" or return;
    print $fh $JSON->encode(\%rec), "\n";
    close $fh;
}

# Read an SSE response to the end. events: decoded JSON payloads, or the string "[DONE]"
# (or the raw text when not JSON); comments: the comment lines (": ping" -> "ping").
# abort_after => N closes the connection after N data events (a client going away);
# stop_if => sub { my ($events, $comments) = @_; ... } closes it when the sub returns true.
# A stream the server cuts ends there, with status 599 (it is never requested again).
sub sse {
    my ($s, $path, %o) = @_;
    my %h = (%{ $o{headers} || {} }, 'content-type' => 'application/json',
             accept => 'text/event-stream');
    my (@events, @comments);
    my $buf = '';
    # HTTP::Tiny sends a GET again when its connection breaks: a cut stream stays cut here
    my $attempt;
    my $cb = sub {
        $attempt //= $_[1];
        die "cut\n" if $_[1] != $attempt;
        $buf .= $_[0];
        while ($buf =~ s/\A(.*?)\r?\n\r?\n//s) {
            for my $line (split /\r?\n/, $1) {
                if ($line =~ /^data: ?(.*)$/) {
                    my $d = $1;
                    my $v = $d eq '[DONE]' ? $d : (eval { $JSON->decode($d) } // $d);
                    push @events, $v;
                } elsif ($line =~ /^: ?(.*)$/) {
                    push @comments, $1;
                }
            }
            die "abort\n" if $o{abort_after} && @events >= $o{abort_after};
            die "abort\n" if $o{stop_if} && $o{stop_if}->(\@events, \@comments);
        }
    };
    my $body = ref $o{body} ? $JSON->encode($o{body}) : ($o{body} // '{}');
    my $http = HTTP::Tiny->new(timeout => $o{timeout} || 60, keep_alive => 0);
    my $r = $http->request($o{method} || 'POST', $s->url($path),
                           { headers => \%h, content => $body, data_callback => $cb });
    record($o{method} || 'POST', $s->url($path), $r, undef);
    return { status => $r->{status}, headers => $r->{headers}, events => \@events,
             comments => \@comments, body => $r->{content} };
}

# The svc-fcgi master pid (health reports it).
sub master_pid {
    my ($s) = @_;
    my $r = $s->req(GET => '/api/health');
    return $r->{json} ? $r->{json}{pid} : undef;
}

# The svc-fcgi masters (pools) that scripts/serve started, from /proc.
sub pool_pids {
    my ($s) = @_;
    my $c = read_file("/proc/$s->{pid}/task/$s->{pid}/children") // '';
    return grep { (read_file("/proc/$_/comm") // '') =~ /^svc-fcgi/ } split ' ', $c;
}

# Rewrite $file in place (no new inode) with $from replaced by $to, then set its atime and
# mtime back: true when its size and mtime are as they were (only ctime tells the change).
sub rewrite_in_place {
    my ($file, $from, $to) = @_;
    my @st = stat $file or die "$file: $!";
    my $t = read_file($file);
    $t =~ s/\Q$from\E/$to/ or die "no '$from' in $file";
    open my $fh, '+<', $file or die "$file: $!";
    print $fh $t;
    close $fh;
    utime $st[8], $st[9], $file;
    my @now = stat $file;
    return $now[7] == $st[7] && $now[9] == $st[9];
}

# The pool's workers: the processes whose parent is the master answering /api/health.
sub worker_pids {
    my ($s) = @_;
    my $master = $s->master_pid or return ();
    opendir my $d, '/proc' or return ();
    return grep { (read_file("/proc/$_/stat") // '') =~ /\)\s+\S+\s+(\d+)/ && $1 == $master }
        grep { /^\d+$/ } readdir $d;
}

# strace attached to $pid, writing to $log (options as strace takes them, e.g. '-e',
# 'trace=openat'), in the background; returns once attached. strace_stop ends it and
# returns the trace.
sub strace_start {
    my ($pid, $log, @opts) = @_;
    unlink $log, "$log.err";
    my $spid = fork // die "fork: $!";
    if (!$spid) {
        open STDERR, '>', "$log.err";
        exec('strace', '-o', $log, @opts, '-p', $pid) or POSIX::_exit(127);
    }
    wait_for(10, sub { (read_file("$log.err") // '') =~ /attached/ });
    return $spid;
}

sub strace_stop {
    my ($spid, $log) = @_;
    kill 'INT', $spid;
    waitpid $spid, 0;
    return read_file($log) // '';
}

# Poll until $code returns true (or $timeout seconds pass); returns the last result.
# Poll GET /api/chat/runs/{id} until the run leaves `running` (or timeout seconds, 15).
sub wait_run {
    my ($s, $id, $timeout) = @_;
    my $deadline = time + ($timeout // 15);
    while (1) {
        my $r = $s->req(GET => "/api/chat/runs/$id");
        return $r if $r->{json} && ($r->{json}{status} // 'running') ne 'running';
        return $r if time >= $deadline;
        sleep 0.1;
    }
}

# The session's svc_turns.jsonl, decoded line by line ({torn => text} for a bad line).
sub turn_lines {
    my ($s, $sid) = @_;
    my $t = read_file($s->root . "/session_$sid/svc_turns.jsonl") // '';
    return map { my $l = $_; eval { $JSON->decode($l) } // { torn => $l } } grep { length } split /\n/, $t;
}

sub wait_for {
    my ($timeout, $code) = @_;
    my $deadline = time + $timeout;
    my $v;
    while (1) {
        $v = $code->();
        return $v if $v || time >= $deadline;
        sleep 0.05;
    }
}

sub stop {
    my ($s) = @_;
    my $pid = delete $s->{pid} or return;
    delete $LIVE{$pid};
    kill 'TERM', $pid;
    my $deadline = time + 20;
    my $gone = 0;
    while (time < $deadline) {
        my $w = waitpid($pid, WNOHANG);
        if ($w == $pid || $w == -1) { $gone = 1; last }
        sleep 0.05;
    }
    kill 'KILL', -$pid;    # leftovers of the group, if any
    waitpid($pid, 0) unless $gone;
    File::Path::remove_tree($_) for glob("$s->{tmp}/svc-serve.*");    # a killed serve's prefix
    close $s->{out} if $s->{out};
    # sanitizer builds (make asan): a report in the server log fails the test
    my $log = $s->log;
    if ($log =~ /(AddressSanitizer|LeakSanitizer|runtime error:)/ && Test::More->can('builder')) {
        Test::More->builder->ok(0, 'no sanitizer report in the server log');
        Test::More->builder->diag(substr($log, $-[0] > 2000 ? $-[0] - 2000 : 0, 6000));
    }
}

sub DESTROY { $_[0]->stop }
END { $_->stop for values %LIVE }

1;
