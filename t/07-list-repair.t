#!/usr/bin/perl
# A run whose process died shows as running in the root index; the next listing notices
# (its run lock is free), repairs the session to error/interrupted and lists it that way.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use SvcCliTest;

my $h = new_home();
is(svc($h, 'chat', 'dies', 'first')->{rc}, 0, 'a finished turn');
my $bg = svc_bg($h, 'chat', 'dies', '/slow 400 one two three four five six');
my $deadline = time + 10;
my $listed;
while (time < $deadline) {
    my $r = svc($h, 'sessions', 'list');
    ($listed) = grep { $_->{session_id} eq 'dies' } @{ jdecode($r->{out})->{sessions} };
    last if $listed && $listed->{status} eq 'running';
    sleep 0.05;
}
is($listed->{status}, 'running', 'listed as running while the run lives');
kill 'KILL', $bg->{pid};
waitpid($bg->{pid}, 0);

my $r = svc($h, 'sessions', 'list');
is($r->{rc}, 0, 'list after the run died');
my ($s) = grep { $_->{session_id} eq 'dies' } @{ jdecode($r->{out})->{sessions} };
is($s->{status}, 'error', 'the listing shows it repaired');
is($s->{last_error}{code}, 'interrupted', 'last_error interrupted');
like($r->{err}, qr/repaired stale run/, 'the repair is logged');
$r = svc($h, 'sessions', 'list', '--status', 'running');
is(scalar @{ jdecode($r->{out})->{sessions} }, 0, 'no session left running');
is(json_file(sidecar_path($h, 'dies'))->{status}, 'error', 'the sidecar is repaired on disk');
is(svc($h, 'chat', 'dies', 'works again')->{rc}, 0, 'the session takes the next run');

done_testing();
