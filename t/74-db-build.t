#!/usr/bin/perl
# A build of the listing database from a whole journal (streamed into it a line at a time,
# issue 25) gives what the directories hold: a session directory another program copied
# in, or removed, before the build is listed as it is (the build compares the root's names
# with its rows); a journal mostly of superseded lines is compacted by the build (a new
# generation, one line a session) as a load into memory compacts it, from the database's
# rows.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcCliTest;
use SvcTest ();

plan skip_all => 'no listing database with sessions.cache: off'
    if ($ENV{SVC_TEST_CACHE} // '') eq 'off';

my $h = new_home();
my $root = $h->{root};
my $journal = "$root/.svc_index.jsonl";
is(svc($h, 'chat', "b$_", "question $_")->{rc}, 0, "turn on b$_") for 1 .. 4;

sub scan {
    my @rows;
    for my $d (glob "$root/session_*") {
        my $sc = json_file("$d/svc_session.json") or next;
        push @rows, "$sc->{session_id} $sc->{updated_at} " . ($sc->{archived} ? 'archived' : 'active');
    }
    return [sort @rows];
}

# List once after the database is deleted: the rows, and what the list logged.
sub built {
    system('rm', '-rf', "$h->{home}/search");
    my $r = svc($h, 'sessions', 'list', '--limit', '500', '--all');
    is($r->{rc}, 0, 'the list answers') or diag($r->{err});
    like $r->{err}, qr/built the listing database/, '... it built the database';
    unlike $r->{err}, qr/rebuilt from the directories/, '... from the journal';
    $h->{last_err} = $r->{err};
    my $rows = [sort map { "$_->{session_id} $_->{updated_at} "
            . ($_->{archived} ? 'archived' : 'active') } @{ jdecode($r->{out})->{sessions} }];
    return $rows;
}

sub gen_of { (SvcTest::read_file($journal) =~ /^\{"svc_index_generation":"(\w+)"/)[0] // '' }

is(svc($h, 'sessions', 'list')->{rc}, 0, 'a first list writes the journal');
is_deeply(built(), scan(), 'a database built from the journal lists the directories');

# another program: b2 copied in as b-copy and b3 removed, no journal line for either
system('cp', '-a', "$root/session_b2", "$root/session_b-copy") == 0 or die;
for my $f ("$root/session_b-copy/svc_session.json", "$root/session_b-copy/session.json") {
    my $t = SvcTest::read_file($f);
    $t =~ s/"b2"/"b-copy"/g;
    SvcTest::write_file($f, $t);
}
system('rm', '-rf', "$root/session_b3") == 0 or die;
my $rows = built();
is_deeply($rows, scan(), 'a session copied in and one removed meanwhile: listed as they are');
ok((grep { /^b-copy / } @$rows) && !(grep { /^b3 / } @$rows), '... b-copy in, b3 out');

# a journal of superseded lines: archived and unarchived 60 times
my $gen = gen_of();
for (1 .. 60) {
    svc($h, 'sessions', 'archive', 'b1');
    svc($h, 'sessions', 'unarchive', 'b1');
}
my $long = -s $journal;
cmp_ok $long, '>', 70000, "the journal grew to $long bytes";
is_deeply(built(), scan(), 'the database built from it lists the directories');
my $short = -s $journal;
cmp_ok $short, '<', 10000, "... and the build compacted the journal ($long -> $short bytes)";
isnt gen_of(), $gen, '... into a new generation';
like $h->{last_err}, qr/compacted the journal from the listing database \($long to $short bytes\)/,
    '... from the rows of the database it built';
is(svc($h, 'chat', 'b4', 'one more')->{rc}, 0, 'a turn after it');
my $r = svc($h, 'sessions', 'list', '--limit', '500', '--all');
unlike $r->{err}, qr/built the listing database/, 'the next list follows the database built';
is_deeply([sort map { "$_->{session_id} $_->{updated_at} "
        . ($_->{archived} ? 'archived' : 'active') } @{ jdecode($r->{out})->{sessions} }],
    scan(), '... and lists the turn');

done_testing;
