package SvcCliTest;
# Helpers for the Perl tests that drive the `svc` command-line tool: a throwaway SVC_HOME
# per test, running build/svc with captured stdout/stderr/exit code, file helpers, JSON
# through JSON::PP, and Python (the reference for the Strands file format) via python3.
use strict;
use warnings;
use Exporter 'import';
use File::Temp ();
use File::Find ();
use File::Spec;
use JSON::PP ();
use POSIX ();
use SvcTest ();
no warnings "exec";

our @EXPORT = qw(new_home svc svc_bg svc_wait slurp spit jdecode jencode json_file py
  python_redump native_dir msg_dir msg_ids tree_listing TS_RE svc_bin sidecar_path
  test_hooks_built gen_sessions_bin peak_rss_unreadable);

use constant TS_RE => qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/;

my $BUILD = $ENV{SVC_BUILD} // 'build';

sub svc_bin { File::Spec->rel2abs("$BUILD/svc") }

# bench/gen_sessions.c built in $dir: the program's path (dies when cc fails).
sub gen_sessions_bin {
    my ($dir) = @_;
    my $src = File::Spec->rel2abs(__FILE__) =~ s{t/lib/SvcCliTest\.pm\z}{bench/gen_sessions.c}r;
    system('cc', '-O2', '-o', "$dir/gen_sessions", $src) == 0 or die "cc $src failed\n";
    return "$dir/gen_sessions";
}

# Why a child's peak RSS (GNU time's %M) says nothing here, or undef when it can be read:
# no /usr/bin/time, or a sanitizer build, whose allocator keeps what is freed.
sub peak_rss_unreadable {
    return 'GNU time (/usr/bin/time) is needed to read a peak RSS' unless -x '/usr/bin/time';
    return 'a sanitizer build' if `nm -A @{[svc_bin()]} 2>/dev/null` =~ /__asan_init/;
    return undef;
}

# Whether build/svc carries the crash hook (make TEST_HOOKS=1; `make test` builds so).
sub test_hooks_built { SvcTest::binary_has(svc_bin(), 'SVC_TEST_CRASH_BEFORE_RENAME') }

# A fresh SVC_HOME with agents.yaml. extra: YAML text appended inside the sessions: map
# (sessions_extra) or at the top level (yaml_extra). SVC_TEST_CACHE=off: caches off.
sub new_home {
    my (%o) = @_;
    my $dir = File::Temp::tempdir('svc-t-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $yaml = "sessions:\n  fsync: " . ($o{fsync} ? 'true' : 'false') . "\n";
    $yaml .= "  cache: off\n" if ($ENV{SVC_TEST_CACHE} // '') eq 'off'; # as SvcTest does
    $yaml .= $o{sessions_extra} if defined $o{sessions_extra};
    $yaml .= $o{yaml_extra} if defined $o{yaml_extra};
    spit("$dir/agents.yaml", $yaml);
    return { home => $dir, root => "$dir/agents/native_sessions", agent => 'svc-agent' };
}

sub _child_env {
    my ($h, $env) = @_;
    $ENV{SVC_HOME} = $h->{home};
    delete $ENV{SVC_CONFIG};
    delete $ENV{SVC_TEST_CRASH_BEFORE_RENAME};
    if ($env) { for my $k (keys %$env) { $ENV{$k} = $env->{$k} } }
}

# Start svc in the background: returns a handle for svc_wait.
sub svc_bg {
    my ($h, @args) = @_;
    my $env = ref $args[0] eq 'HASH' ? shift @args : undef;
    my $out = File::Temp->new(TEMPLATE => 'svc-out-XXXXXX', TMPDIR => 1);
    my $err = File::Temp->new(TEMPLATE => 'svc-err-XXXXXX', TMPDIR => 1);
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        _child_env($h, $env);
        open STDOUT, '>', $out->filename or POSIX::_exit(126);
        open STDERR, '>', $err->filename or POSIX::_exit(126);
        # make valgrind: each svc runs under memcheck, its report in SVC_VALGRIND (a dir)
        exec 'valgrind', '--quiet', '--error-exitcode=99', '--leak-check=full',
            '--errors-for-leak-kinds=definite', "--log-file=$ENV{SVC_VALGRIND}/vg.%p.log",
            svc_bin(), @args if $ENV{SVC_VALGRIND};
        exec svc_bin(), @args;
        POSIX::_exit(127);
    }
    return { pid => $pid, out => $out, err => $err };
}

sub svc_wait {
    my ($b) = @_;
    waitpid($b->{pid}, 0);
    my $st = $?;
    my %r = (
        out => slurp($b->{out}->filename),
        err => slurp($b->{err}->filename),
        rc  => ($st & 127) ? -1 : $st >> 8,
        sig => $st & 127,
    );
    return \%r;
}

# Run svc to completion: {out, err, rc, sig}. An optional hashref first sets env vars.
sub svc { svc_wait(svc_bg(@_)) }

sub slurp {
    my ($p) = @_;
    open my $fh, '<:raw', $p or return undef;
    local $/;
    my $d = <$fh>;
    return $d // '';
}

sub spit {
    my ($p, $d) = @_;
    open my $fh, '>:raw', $p or die "$p: $!";
    print $fh $d;
    close $fh or die "$p: $!";
}

my $J = JSON::PP->new->utf8->canonical->allow_nonref;
sub jdecode { $J->decode($_[0]) }
sub jencode { $J->encode($_[0]) }
sub json_file { my $d = slurp($_[0]); defined $d ? jdecode($d) : undef }

# Run python3 with code and args; returns stdout bytes (dies on failure).
sub py {
    my ($code, @args) = @_;
    my $pid = open(my $fh, '-|');
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        $ENV{PYTHONPATH} = SvcTest::repo() . '/t/lib'; # strands_read.py
        exec 'python3', '-c', $code, @args;
        POSIX::_exit(127);
    }
    local $/;
    binmode $fh;
    my $out = <$fh> // '';
    close $fh;
    die "python3 failed ($?)" if $?;
    return $out;
}

# What Python's json.dumps(obj, indent=2, ensure_ascii=False) writes for the parsed file.
sub python_redump {
    my ($path) = @_;
    return py(<<'PY', $path);
import json, sys
with open(sys.argv[1], 'rb') as f:
    obj = json.loads(f.read().decode('utf-8'))
sys.stdout.buffer.write(json.dumps(obj, indent=2, ensure_ascii=False).encode('utf-8'))
PY
}

sub native_dir { my ($h, $sid) = @_; "$h->{root}/session_$sid" }
sub sidecar_path { my ($h, $sid) = @_; native_dir($h, $sid) . "/svc_session.json" }
sub msg_dir { my ($h, $sid) = @_; native_dir($h, $sid) . "/agents/agent_$h->{agent}/messages" }

# Message ids present as message_<n>.json, ascending.
sub msg_ids {
    my ($h, $sid) = @_;
    opendir(my $d, msg_dir($h, $sid)) or return ();
    my @ids = sort { $a <=> $b } map { /^message_(\d+)\.json$/ ? $1 : () } readdir $d;
    return @ids;
}

# Recursive listing (relative paths, with type) of a directory, sorted.
sub tree_listing {
    my ($dir) = @_;
    my @l;
    return '' unless -d $dir;
    File::Find::find({ no_chdir => 1, wanted => sub {
        my $rel = File::Spec->abs2rel($File::Find::name, $dir);
        push @l, (-d $File::Find::name ? 'd ' : 'f ') . $rel;
    } }, $dir);
    return join "\n", sort @l;
}

1;
