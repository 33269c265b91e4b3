package StrandsSDK;
# The real Strands Agents SDK for svc's tests (docs/TESTING.md). Its source is not in this
# repository (PyPI cannot be reached here, nor in CI): STRANDS_SRC names a checkout of
# strands-agents/sdk-python, and a test that needs it skips without it. t/strands/ holds
# what drives it: svcstrands.py (a scripted model, @tools, an approval hook), turn.py (one
# Agent turn on a root), multi.py (a Swarm and a Graph), and stubs/ for the modules Debian
# lacks. Debian's python3 runs them (STRANDS_PYTHON overrides).
#
#   StrandsSDK::require_sdk();                    # skip_all unless STRANDS_SRC is usable
#   my $sdk = StrandsSDK->new($root);              # a model log and side-effect file of its own
#   my $r = $sdk->turn($sid, 'hello', '--summarizing', ...);   # decoded JSON of turn.py
#   $sdk->calls;                                   # the scripted model's calls so far
#   $sdk->multi($sid);                             # run the Swarm and the Graph
use strict;
use warnings;
use File::Temp ();
use FindBin;
use JSON::PP ();
use Test::More ();

my $J = JSON::PP->new->utf8->canonical->allow_nonref;
my $DIR = "$FindBin::Bin/strands";
sub python { $ENV{STRANDS_PYTHON} // '/usr/bin/python3' }

sub require_sdk {
    my $src = $ENV{STRANDS_SRC};
    Test::More::plan(skip_all => 'STRANDS_SRC is not set: these tests run the real Strands SDK '
        . 'from a checkout of strands-agents/sdk-python (docs/TESTING.md says how)') unless $src;
    Test::More::plan(skip_all => "STRANDS_SRC=$src holds no src/strands/agent/agent.py")
        unless -f "$src/src/strands/agent/agent.py";
    my $py = python();
    my $out = `STRANDS_SRC='$src' '$py' -c 'import sys; sys.path[:0]=["$DIR", "$DIR/stubs", "$src/src"]; import strands' 2>&1`;
    Test::More::plan(skip_all => "the Strands SDK does not import with $py "
        . '(scripts/install-deps installs its Debian packages): ' . substr($out, -300)) if $?;
}

sub new {
    my ($class, $root) = @_;
    my $dir = File::Temp::tempdir('strands-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    return bless { root => $root, log => "$dir/model.jsonl", side => "$dir/side-effects" }, $class;
}

sub _run {
    my ($self, @cmd) = @_;
    local $ENV{STRANDS_MODEL_LOG} = $self->{log};
    local $ENV{STRANDS_SIDE_EFFECTS} = $self->{side};
    my $err = File::Temp->new(TMPDIR => 1);
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open STDERR, '>', $err->filename;
        exec python(), @cmd;
        exit 127;
    }
    local $/;
    my $out = <$fh>;
    close $fh;
    my $rc = $? >> 8;
    open my $e, '<', $err->filename;
    my $stderr = <$e>;
    die "strands @cmd: exit $rc\n$stderr" if $rc;
    return $J->decode($out);
}

sub turn {
    my ($self, $sid, $prompt, @opts) = @_;
    return $self->_run("$DIR/turn.py", $self->{root}, $sid, $prompt, @opts);
}

sub multi {
    my ($self, $sid) = @_;
    return $self->_run("$DIR/multi.py", $self->{root}, $sid);
}

# The model's calls: [{system, messages}], oldest first.
sub calls {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or return [];
    return [map { $J->decode($_) } grep { length } split /\n/, do { local $/; <$fh> }];
}

sub side_effects {
    my ($self) = @_;
    open my $fh, '<', $self->{side} or return '';
    local $/;
    return <$fh>;
}

1;
