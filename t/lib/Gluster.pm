package Gluster;
# A GlusterFS volume of two bricks, mounted twice through FUSE (two clients with caches of
# their own, as two hosts see one shared root), for the tests of SPEC 10.
#
#   my $g = Gluster->start;          # dies with the reason when glusterd or FUSE cannot run
#   $g->mount_a; $g->mount_b;        # the two mount points of the one volume
#   $g->stop;                        # umount, volume stop/delete, glusterd killed by its pid
#
#   my $g = Gluster->start(volume => 0);   # glusterd only, for a test that makes its volume
#   $g->host; $g->cli_log; $g->track(volume => $v); $g->track(mount => $dir);  # stop() tears down
#
# glusterd runs with its own working directory and pid file in the test's temp directory;
# the volume and mount options are those of PLATFORM-NOTES (read-after-write between
# clients). stop() also runs from DESTROY, END and on SIGINT/SIGTERM, so a test that dies
# leaves no daemon, volume or mount behind. glusterd's port (24007) is machine-wide: start
# holds /tmp/svc-gluster.lock (flock) until stop, unless a process it runs under holds it
# already (`flock /tmp/svc-gluster.lock prove ...`), so two such tests wait for each other.
use strict;
use warnings;

use File::Temp qw(tempdir);
use POSIX ();
use Sys::Hostname qw(hostname);
use Time::HiRes qw(time sleep);

our @VOLUME_OFF = qw(performance.stat-prefetch performance.write-behind
  performance.open-behind performance.quick-read);
our $MOUNT_OPTS = 'attribute-timeout=0,entry-timeout=0,negative-timeout=0';
my %LIVE;

sub _run {
    my ($self, @cmd) = @_;
    my $out = `@{[ join ' ', map { _q($_) } @cmd ]} 2>&1`;
    return ($? == 0, $out);
}

sub _q { my $s = shift; $s =~ s/'/'\\''/g; "'$s'" }

sub _gluster {
    my ($self, @args) = @_;
    return $self->_run('gluster', '--mode=script', "--log-file=$self->{dir}/log/cli.log", @args);
}

# Why this machine cannot run the volume, or undef.
sub _cannot {
    for my $bin (qw(glusterd gluster mount.glusterfs)) {
        return "$bin not found (scripts/install-deps installs glusterfs-server and "
            . "glusterfs-client)" unless grep { -x "$_/$bin" } split /:/, "$ENV{PATH}:/usr/sbin:/sbin";
    }
    return "/dev/fuse is missing (FUSE mounts are impossible here)" unless -c '/dev/fuse';
    return "not root: mounting needs root" if $> != 0;
    my $busy = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => 24007, Timeout => 1);
    return "a glusterd already listens on port 24007 (stop it first)" if $busy;
    return undef;
}

our $LOCK = '/tmp/svc-gluster.lock';

# Whether a process this one runs under holds $LOCK (flock(1) around the test run).
sub _ancestor_holds {
    my @st = stat $LOCK or return 0;
    my %holders;
    open my $lk, '<', '/proc/locks' or return 0;
    while (<$lk>) {
        my @f = split;
        next unless ($f[1] // '') eq 'FLOCK';
        my ($ino) = ($f[5] // '') =~ /:(\d+)$/;
        $holders{ $f[4] } = 1 if defined $ino && $ino == $st[1];
    }
    for (my $p = getppid(); $p > 1;) {
        return 1 if $holders{$p};
        open my $fh, '<', "/proc/$p/stat" or last;
        my ($ppid) = (<$fh> // '') =~ /\)\s+\S+\s+(\d+)/ or last;
        $p = $ppid;
    }
    return 0;
}

sub start {
    my ($class, %o) = @_;
    require IO::Socket::INET;
    local $ENV{PATH} = "$ENV{PATH}:/usr/sbin:/sbin";
    my $lockfh;
    unless (_ancestor_holds()) {
        open $lockfh, '>>', $LOCK or die "GlusterFS cannot run: $LOCK: $!\n";
        flock($lockfh, 2) or die "GlusterFS cannot run: flock $LOCK: $!\n";
    }
    if (my $why = _cannot()) { die "GlusterFS cannot run: $why\n" }
    my $dir = tempdir('svc-gluster-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $self = bless { dir => $dir, vol => "svct$$", host => hostname(), lockfh => $lockfh }, $class;
    $LIVE{"$self"} = $self;
    mkdir "$dir/$_" for qw(wd log a b);
    open my $in, '<', '/etc/glusterfs/glusterd.vol' or die "GlusterFS cannot run: glusterd.vol: $!\n";
    my $vol = do { local $/; <$in> };
    $vol =~ s{option working-directory \S+}{option working-directory $dir/wd};
    open my $out, '>', "$dir/glusterd.vol" or die "glusterd.vol: $!";
    print $out $vol;
    close $out;
    $self->_step('start glusterd', 'glusterd', '-f', "$dir/glusterd.vol", '-p', "$dir/glusterd.pid",
                 '-l', "$dir/log/glusterd.log");
    $self->{glusterd} = $self->_wait_pid("$dir/glusterd.pid");
    my $deadline = time + 20;
    until (($self->_gluster('volume', 'list'))[0]) {
        $self->_fail('glusterd does not answer') if time > $deadline;
        sleep 0.1;
    }
    return $self if defined $o{volume} && !$o{volume};
    my $h = $self->{host};
    $self->_gstep('volume create', 'volume', 'create', $self->{vol}, "$h:$dir/b1", "$h:$dir/b2", 'force');
    $self->{created} = 1;
    $self->_gstep("volume set $_", 'volume', 'set', $self->{vol}, $_, 'off') for @VOLUME_OFF;
    $self->_gstep('volume start', 'volume', 'start', $self->{vol});
    $self->{started} = 1;
    for my $m (qw(a b)) {
        $self->_step("mount $m", 'mount', '-t', 'glusterfs', '-o',
                     "$MOUNT_OPTS,log-file=$dir/log/mount-$m.log", "$h:/$self->{vol}", "$dir/$m");
        $self->{mounted}{$m} = _client_pid("$dir/$m") || -1;
    }
    return $self;
}

# The glusterfs client process serving the mount point $mp (killed if umount leaves it).
sub _client_pid {
    my ($mp) = @_;
    opendir my $d, '/proc' or return;
    for my $pid (grep { /^\d+$/ } readdir $d) {
        open my $fh, '<', "/proc/$pid/cmdline" or next;
        my $cmd = do { local $/; <$fh> } // '';
        my @a = split /\0/, $cmd;
        return $pid if @a && $a[0] =~ m{glusterfs$} && $a[-1] eq $mp;
    }
    return;
}

# Code run first by stop(): whatever holds files on the mounts (servers) is stopped then.
sub before_stop { $_[0]{before_stop} = $_[1] }

sub _wait_pid {
    my ($self, $file) = @_;
    my $deadline = time + 10;
    while (time < $deadline) {
        if (open my $fh, '<', $file) {
            my $pid = <$fh>;
            return $1 if defined $pid && $pid =~ /^(\d+)/;
        }
        sleep 0.05;
    }
    $self->_fail("no pid file $file");
}

sub _step {
    my ($self, $what, @cmd) = @_;
    my ($ok, $out) = $self->_run(@cmd);
    $self->_fail("$what: $out") unless $ok;
}

sub _gstep {
    my ($self, $what, @args) = @_;
    my ($ok, $out) = $self->_gluster(@args);
    $self->_fail("$what: $out") unless $ok;
}

sub _fail {
    my ($self, $why) = @_;
    my $log = '';
    if (open my $fh, '<', "$self->{dir}/log/glusterd.log") {
        my @l = <$fh>;
        $log = join '', @l[($#l > 15 ? $#l - 15 : 0) .. $#l];
    }
    $self->stop;
    die "GlusterFS cannot run: $why\n--- glusterd.log (tail) ---\n$log";
}

sub dir     { $_[0]{dir} }
sub host    { $_[0]{host} }
sub cli_log { "$_[0]{dir}/log/cli.log" }
# A volume (stopped and deleted) or a mount (unmounted) a test made, for stop().
sub track {
    my ($self, %o) = @_;
    if ($o{volume}) { $self->{vol} = $o{volume}; $self->{created} = $self->{started} = 1 }
    $self->{mounted}{ $o{mount} } = _client_pid($o{mount}) || -1 if $o{mount};
}
sub mount_a { "$_[0]{dir}/a" }
sub mount_b { "$_[0]{dir}/b" }
sub volume  { $_[0]{vol} }

sub stop {
    my ($self) = @_;
    return if $self->{stopped}++;
    delete $LIVE{"$self"};
    local $ENV{PATH} = "$ENV{PATH}:/usr/sbin:/sbin";
    eval { $self->{before_stop}->() } if $self->{before_stop};
    for my $m (sort keys %{ $self->{mounted} || {} }) {
        my $p = $m =~ m{^/} ? $m : "$self->{dir}/$m";
        # a process still holding a file there makes it busy: detach it lazily then
        ($self->_run('umount', $p))[0] or $self->_run('umount', '-l', $p);
        my $client = $self->{mounted}{$m};
        kill 'TERM', $client if $client > 0 && (_client_pid($p) // 0) == $client;
    }
    $self->_gluster('volume', 'stop', $self->{vol}, 'force') if $self->{started};
    $self->_gluster('volume', 'delete', $self->{vol}) if $self->{created};
    if (my $pid = $self->{glusterd}) {
        kill 'TERM', $pid;
        my $deadline = time + 5;
        sleep 0.05 while kill(0, $pid) && time < $deadline && !waitpid($pid, POSIX::WNOHANG());
        kill 'KILL', $pid if kill 0, $pid;
    }
    close $self->{lockfh} if $self->{lockfh};
}

sub DESTROY { $_[0]->stop }
END { $_->stop for values %LIVE }
for my $sig (qw(INT TERM HUP)) {
    $SIG{$sig} = sub { exit 1 };    # END tears down
}

1;
