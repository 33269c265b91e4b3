#!/usr/bin/perl
# The short torture run of `make test` (the long one is `make torture`): two pools on one
# root, clients on shared and fresh sessions, workers, masters and detached runners
# SIGKILLed at random; scripts/torture checks fsck, contiguous ids, counts, no session left
# running, every answered turn on disk, only 200/202/409 answered, and exits 0 when all hold.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

my $out = `$SvcTest::REPO/scripts/torture --turns 240 --shared 4 --fresh 4 --sessions 2 --kill-every 0.3 2>&1`;
my $rc = $? >> 8;
diag $out;
is $rc, 0, 'torture: every check holds';
like $out, qr/kills: (\d+) workers, (\d+) masters, (\d+) runners/, 'the numbers are printed';
my ($w, $m, $rn) = $out =~ /kills: (\d+) workers, (\d+) masters, (\d+) runners/;
ok(($w // 0) + ($m // 0) + ($rn // 0) > 0, 'processes were killed');
like $out, qr/answered turns checked on disk: [1-9]/, 'answered turns were checked';
done_testing();
