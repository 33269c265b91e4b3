#!/usr/bin/perl
# What `make powercut` found, each kept fixed (docs/TESTING.md "Power cuts"; the sync order
# of a turn is t/22's):
#   - a synchronous run's record is written without a sync, so a power cut can leave it
#     empty: the API answers 404 run_not_found for it (not 500), and `svc fsck` reports
#     it as empty_run_record and --repair removes it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcTest;

my $J = JSON::PP->new->utf8->canonical;

# ---- an empty run record ----
{
    my $s = SvcTest->start(config => "sessions:\n  fsync: true\n");
    my $r = $s->req(POST => '/api/chat', body => { session_id => 'rec', messages => [{ role => 'user', content => 'hi' }] });
    is($r->{status}, 200, 'a synchronous turn');
    my $run = $r->{json}{run_id};
    my $rec = $s->root . "/.svc_runs/$run.json";
    ok(-s $rec, 'its run record is there');
    is($s->req(GET => "/api/chat/runs/$run")->{status}, 200, 'and answered');
    open my $fh, '>', $rec or die;    # what a power cut leaves of it
    close $fh;
    $r = $s->req(GET => "/api/chat/runs/$run");
    is($r->{status}, 404, 'an empty record: 404') or diag $r->{body};
    is($r->{json}{error}{code}, 'run_not_found', 'run_not_found');
    my $fsck = sub {
        local $ENV{SVC_HOME} = $s->home;
        local $ENV{SVC_CONFIG} = $s->home . '/agents.yaml';
        my $out = `'@{[SvcTest::build()]}/svc' fsck --json @_ 2>/dev/null`;
        return $J->decode($out);
    };
    my $rep = $fsck->();
    is_deeply([map { "$_->{kind} $_->{file}" } @{ $rep->{problems} }], ["empty_run_record .svc_runs/$run.json"],
        'fsck reports it, and nothing else');
    $rep = $fsck->('--repair');
    ok($rep->{problems}[0]{repaired}, 'fsck --repair removes it');
    ok(!-e $rec, 'gone');
    is($fsck->()->{counts}{problems}, 0, 'a second fsck finds nothing');
    $s->stop;
}

done_testing();
