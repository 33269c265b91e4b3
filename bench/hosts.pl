#!/usr/bin/perl
# make bench-hosts: what several hosts on one shared root cost (SPEC 10), in one run.
# A GlusterFS volume of two bricks mounted twice through FUSE (t/lib/Gluster.pm) holds the
# shared root; each row times BENCH_HOSTS_TURNS sequential echo turns on one session and as
# many list pages (?limit=50 over BENCH_HOSTS_SESSIONS sessions), one client, fsync on:
#   two hosts taking turns on the shared volume, one host on it, one host on local disk,
#   and one host on local disk with sessions.shared: on (the caches' trust of inotify off).
# The setups run side by side and take turns in slices of 5 requests.
# Prints a markdown table (p50 and mean per request, ratio to local disk) to stdout.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use File::Temp ();
use List::Util qw(sum);
use Time::HiRes qw(time);
use Gluster;
use SvcTest;

my $turns    = $ENV{BENCH_HOSTS_TURNS}    || 40;
my $sessions = $ENV{BENCH_HOSTS_SESSIONS} || 100;

sub cfg { my ($root, $extra) = @_; "server:\n  workers: 2\nsessions:\n  root: $root\n  fsync: true\n" . ($extra // '') }

sub p50 { my @s = sort { $a <=> $b } @_; $s[$#s / 2] }

# Times requests $from..$to-1, round-robin over @$hosts, into @$ms (milliseconds).
sub timed {
    my ($from, $to, $hosts, $req, $ms) = @_;
    for my $i ($from .. $to - 1) {
        my $h = $hosts->[ $i % @$hosts ];
        my $t = time;
        my $r = $req->($h, $i);
        die "bench-hosts: HTTP $r->{status}: $r->{body}\n" unless $r->{status} == 200;
        push @$ms, (time - $t) * 1000;
    }
}

sub seed {
    my ($name, $h) = @_;
    for my $i (1 .. $sessions) {    # the sessions a list page walks
        my $r = $h->req(POST => '/api/chat', body => { session_id => "bench-$name-$i",
                        messages => [{ role => 'user', content => "s $i" }] });
        die "bench-hosts: seeding: $r->{status}\n" unless $r->{status} == 200;
    }
}

# One slice of a setup's measurement: requests $from..$to-1 of its turns and list pages.
sub slice {
    my ($set, $from, $to) = @_;
    my ($name, $hosts) = @$set{qw(name hosts)};
    timed($from, $to, $hosts, sub {
        $_[0]->req(POST => '/api/chat', body => { session_id => "bench-$name-turns",
                   messages => [{ role => 'user', content => "turn $_[1]" }] });
    }, $set->{turn});
    timed($from, $to, $hosts, sub { $_[0]->req(GET => '/api/v1/chat/sessions?limit=50') },
          $set->{list});
}

my $g = Gluster->start;
my $local = File::Temp::tempdir('svc-bench-hosts-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my @sets = (
    { name => 'two', label => 'two hosts taking turns, GlusterFS (2 FUSE mounts)',
      hosts => [SvcTest->start(config => cfg($g->mount_a . '/two')),
                SvcTest->start(config => cfg($g->mount_b . '/two'))] },
    { name => 'one', label => 'one host, GlusterFS (FUSE)',
      hosts => [SvcTest->start(config => cfg($g->mount_a . '/one'))] },
    { name => 'local', label => 'one host, local disk (baseline)',
      hosts => [SvcTest->start(config => cfg("$local/off"))] },
    { name => 'on', label => 'one host, local disk, sessions.shared: on',
      hosts => [SvcTest->start(config => cfg("$local/on", "  shared: on\n"))] },
);
$g->before_stop(sub { $_->stop for map { @{ $_->{hosts} } } @sets });
for my $set (@sets) {
    seed($set->{name}, $set->{hosts}[0]);
    $set->{$_} = [] for qw(turn list);
}
# the setups take turns in slices of 5, so a load that comes and goes hits each alike
for (my $i = 0; $i < $turns; $i += 5) {
    slice($_, $i, $i + 5 > $turns ? $turns : $i + 5) for @sets;
}
$g->stop;

my %p50 = map { my $s = $_; $s->{name} => { map { $_ => p50(@{ $s->{$_} }) } qw(turn list) } } @sets;
printf "%d sequential requests a row, one client, fsync on; list pages over %d sessions\n\n",
    $turns, $sessions;
print "| setup | turn p50 ms | turn mean ms | turn ratio | list p50 ms | list mean ms | list ratio |\n";
print "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
for my $set (@sets) {
    my ($t, $l) = map { [p50(@$_), sum(@$_) / @$_] } @$set{qw(turn list)};
    printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", $set->{label}, @$t,
        $t->[0] / $p50{local}{turn}, @$l, $l->[0] / $p50{local}{list};
}
