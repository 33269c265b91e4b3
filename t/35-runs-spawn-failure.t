#!/usr/bin/perl
# A run that cannot be started changes nothing (no session, no run record); an
# Idempotency-Key names a run only once that run really runs.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Digest::SHA qw(sha256_hex);
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 2);
my $root = $s->root;
system("mkdir", "-p", $root) == 0 or die "mkdir $root";

sub listing {
    my @all;
    opendir my $d, $root or return ();
    return sort grep { !/^\.\.?$/ } readdir $d;
}

# the runs directory cannot be made (a file is in its place): 500, and nothing else happens
SvcTest::write_file("$root/.svc_runs", "not a directory\n");
my @before = listing();
my $r = $s->req(POST => '/api/chat/runs',
    body => { session_id => 'nospawn', messages => [{ role => 'user', content => 'hi' }] });
is $r->{status}, 500, 'runs directory unusable: 500';
is $r->{json} && $r->{json}{error}{code}, 'io_error', 'io_error';
ok !-e "$root/session_nospawn", 'no session was created';
is_deeply [listing()], \@before, 'nothing new in the root';
unlink "$root/.svc_runs";

# the key cannot be stored (a directory holds its name): the run still starts and finishes,
# and the key is simply not remembered
my $idem = "$root/.svc_runs/idem-" . sha256_hex("k-sess\nk1") . '.json';
mkdir "$root/.svc_runs";
mkdir $idem;
$r = $s->req(POST => '/api/chat/runs', headers => { 'idempotency-key' => 'k1' },
    body => { session_id => 'k-sess', messages => [{ role => 'user', content => 'hello' }] });
is $r->{status}, 202, 'key not storable: the run starts anyway';
my $rid = $r->{json}{run_id};
my $deadline = time + 10;
my $g;
while (time < $deadline) {
    $g = $s->req(GET => "/api/chat/runs/$rid");
    last if ($g->{json}{status} // 'running') ne 'running';
    sleep 0.1;
}
is $g->{json}{status}, 'done', 'and finishes';
like $s->log, qr/Idempotency-Key could not be recorded/, 'the lost key is logged';
ok -d $idem, 'the directory in the way is left alone';

done_testing();
