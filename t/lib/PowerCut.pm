package PowerCut;
# pcfs (t/powercut/pcfs.c, built as $SVC_BUILD/powercut/pcfs) from Perl: mount a backing
# directory, cut the power, read the trees it left, unmount. Perl core modules only.
#
#   my $fs = PowerCut->mount($backing, $mountpoint, $images, @pcfs_options);
#   my $st = $fs->ctl('cut');    # or 'status', 'flush': {ops, syncs, cut, at_op, at_sync, mono}
#   $fs->unmount;                 # also at DESTROY and END; then $images/strict, $images/journal
#
# Where pcfs cannot run (no /dev/fuse or fusermount3, not built), mount dies saying why.
use strict;
use warnings;
no warnings "exec";
use IO::Socket::UNIX;
use POSIX qw(WNOHANG _exit);
use Time::HiRes qw(sleep time);

my %LIVE;

sub bin { ($ENV{SVC_BUILD} || 'build') . '/powercut/pcfs' }

# Why pcfs cannot run here, or undef.
sub unavailable {
    return 'no /dev/fuse' unless -e '/dev/fuse';
    return 'no fusermount3 (apt-get install fuse3)' unless system('fusermount3 -V >/dev/null 2>&1') == 0;
    return bin() . ' is not built (make powercut-tools)' unless -x bin();
    return undef;
}

sub mounted { my ($mnt) = @_; (slurp('/proc/self/mountinfo') // '') =~ /\Q $mnt \E/ }

sub slurp { my ($p) = @_; open my $fh, '<', $p or return undef; local $/; <$fh> }

sub mount {
    my ($class, $backing, $mnt, $images, @opts) = @_;
    my $why = unavailable();
    die "PowerCut: pcfs cannot run: $why\n" if $why;
    mkdir $images;
    my $log = "$images.log";
    my $ctl = "$images.sock";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        delete $ENV{LD_PRELOAD};
        open STDOUT, '>>', $log;
        open STDERR, '>>', $log;
        exec bin(), '-f', $backing, $mnt, "--images=$images", "--ctl=$ctl", @opts;
        _exit(127);
    }
    my $self = bless { pid => $pid, owner => $$, mnt => $mnt, images => $images, ctl => $ctl,
                       log => $log }, $class;
    $LIVE{$pid} = $self;
    for (1 .. 250) {
        return $self if mounted($mnt);
        if (waitpid($pid, WNOHANG) == $pid) {
            delete $LIVE{$pid};
            die "PowerCut: pcfs did not mount:\n" . (slurp($log) // '');
        }
        sleep 0.02;
    }
    $self->unmount;
    die "PowerCut: pcfs did not mount in 5 s\n";
}

# One control command; its status line as a hash, or undef when pcfs does not answer.
sub ctl {
    my ($self, $cmd) = @_;
    my $s = IO::Socket::UNIX->new(Peer => $self->{ctl}) or return undef;
    print $s $cmd;
    my $line = <$s>;
    return $line ? { $line =~ /(\w+) ([\d.]+)/g } : undef;
}

# The status pcfs wrote at the cut (and at unmount), or undef before either.
sub status {
    my ($self) = @_;
    my $t = slurp("$self->{images}/status") // return undef;
    return { $t =~ /(\w+) ([\d.]+)/g };
}

sub cut_done { -e "$_[0]{images}/status" }

sub unmount {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;    # not in a forked child
    for my $try (1 .. 100) {
        last unless mounted($self->{mnt});
        last if system('fusermount3', '-u', '-q', $self->{mnt}) == 0;
        if ($try == 100) { system('umount', '-l', $self->{mnt}); last }
        sleep 0.05;
    }
    # a file still open on a lazily unmounted mount keeps pcfs: stopped then
    for my $sig (0, 'TERM', 'KILL') {
        kill $sig, $self->{pid} if $sig;
        my $end = time + 5;
        while (time < $end && waitpid($self->{pid}, WNOHANG) == 0) { sleep 0.05 }
        last if !kill 0, $self->{pid};
    }
    delete $LIVE{ $self->{pid} };
    delete $self->{pid};
}

sub DESTROY { $_[0]->unmount }
END { $_->unmount for values %LIVE }

1;
