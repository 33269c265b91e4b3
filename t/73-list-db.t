#!/usr/bin/perl
# The listing database (SPEC 11, core/listdb.h): a pool with sessions.index_db on lists from
# a per-host SQLite file under search.index_dir/listing, fed from the root's journal. Every page
# equals what the directories hold: after turns of this pool, after a turn by another
# process (the CLI, which appends to the journal), after a session directory copied in by
# another program (a rescan of the root's names), after the file is deleted or overwritten
# with garbage (built anew), and while it is built in the background (the answer comes from
# memory and says so: X-Svc-Index: building).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use SvcTest;

plan skip_all => 'needs test hooks (make TEST_HOOKS=1)' unless SvcTest->test_hooks_built;
my $JSON = JSON::PP->new->canonical;
my $config = "sessions:\n  cache: auto\n  index_db: true\n";
my $s = SvcTest->start(workers => 2, config => $config);
my $root = $s->root;
my $home = $s->home;
my $api = '/api/v1/chat/sessions';

# What the directories say: [sid, updated_at, status, title, archived], in listing order.
sub scan {
    my @rows;
    opendir my $d, $root or return [];
    for my $e (grep { /^session_/ } readdir $d) {
        my $t = SvcTest::read_file("$root/$e/svc_session.json") // next;
        my $sc = $JSON->decode($t);
        push @rows, [$sc->{session_id}, $sc->{updated_at}, $sc->{status}, $sc->{title},
                     $sc->{archived} ? 1 : 0];
    }
    return [sort { $b->[1] cmp $a->[1] || $a->[0] cmp $b->[0] } @rows];
}

# Every page (7 at a time), archived included; the headers of the first page in $hdr.
sub listing {
    my ($srv, $hdr, $extra) = @_;
    my (@rows, $cursor);
    for (1 .. 100) {
        my $q = "$api?limit=7&include_archived=true" . ($extra // '');
        $q .= "&cursor=$cursor" if defined $cursor;
        my $r = $srv->req(GET => $q);
        return "status $r->{status}: $r->{body}" unless $r->{status} == 200 && $r->{json};
        %$hdr = %{ $r->{headers} } if $hdr && !defined $cursor;
        push @rows, map { [$_->{session_id}, $_->{updated_at}, $_->{status}, $_->{title},
                           $_->{archived} ? 1 : 0] } @{ $r->{json}{sessions} };
        $cursor = $r->{json}{next_cursor} // last;
    }
    return \@rows;
}

sub chat {
    my ($sid, $text) = @_;
    return $s->req(POST => '/api/chat', body => { session_id => $sid, message => $text })->{status};
}

for my $i (1 .. 20) { chat(sprintf('ld-%02d', $i), "question number $i about zebra$i") }
is_deeply listing($s), scan(), 'every page equals the directories';
my @db = glob "$home/search/listing/*.sqlite";
is scalar(@db), 1, 'one listing database under search.index_dir';
my $db = $db[0];
ok -s $db, '... and it is not empty';
is_deeply listing($s, undef, '&q=ZEBRA1'), [grep { $_->[3] =~ /zebra1/i } @{ scan() }],
    'a title search (q=, folded) equals the titles that contain it';
SKIP: {
    skip 'no sqlite3 program', 3 unless system('sqlite3 -version >/dev/null 2>&1') == 0;
    # the trigram table's segments: each rewrite of a title's trigrams adds one to search
    my $segs = sub { my $n = `sqlite3 '$db' 'SELECT count(*) FROM t_data'`; chomp $n; $n };
    my $before = $segs->();
    for (1 .. 3) { chat('ld-02', "another turn $_"); listing($s) }
    is $segs->(), $before, 'turns that keep a title leave the trigram table as it was';
    is $s->req(PATCH => "$api/ld-02", body => { title => 'Renamed okapi' })->{status}, 200,
        'a rename';
    is_deeply [map { $_->[0] } @{ listing($s, undef, '&q=okapi') }], ['ld-02'],
        '... is found by its new title';
}
my $arch = $s->req(POST => "$api/ld-03/archive");
is $arch->{status}, 200, 'archive one';
my $plain = $s->req(GET => "$api?limit=100")->{json}{sessions};
ok !(grep { $_->{session_id} eq 'ld-03' } @$plain), 'an archived session leaves the default list';

# another process: the CLI writes a turn on the same root (its journal line is read)
my $out = `SVC_HOME='$home' '@{[SvcTest::build()]}/svc' chat ld-cli 'from the cli' 2>&1`;
is $?, 0, 'a turn by another process (svc chat)' or diag $out;
is_deeply listing($s), scan(), '... is listed by the pool';

# another program: a session directory copied in (no journal line: the root's mtime moved)
system('cp', '-a', "$root/session_ld-05", "$root/session_ld-copy") == 0 or die;
my $sc = "$root/session_ld-copy/svc_session.json";
my $t = SvcTest::read_file($sc);
$t =~ s/"ld-05"/"ld-copy"/g;
SvcTest::write_file($sc, $t);
my $sj = "$root/session_ld-copy/session.json";
$t = SvcTest::read_file($sj);
$t =~ s/"ld-05"/"ld-copy"/g;
SvcTest::write_file($sj, $t);
my $l = listing($s);
ok((grep { $_->[0] eq 'ld-copy' } @$l), 'a session copied in by another program is listed');
is_deeply $l, scan(), '... and the pages still equal the directories';
system('rm', '-rf', "$root/session_ld-copy") == 0 or die;
is_deeply listing($s), scan(), 'its directory removed: gone from the list';

# lost: the file deleted
unlink $db or die;
is_deeply listing($s), scan(), 'the database deleted: the list is still whole';
ok -s $db, '... and the database is back';
like $s->log, qr/index: built the listing database \Q$db\E/, '... a log line says it was built';

# damaged: the file overwritten with garbage
SvcTest::write_file($db, "this is not a database\n" x 100);
is_deeply listing($s), scan(), 'the database overwritten with garbage: the list is whole';
like $s->log, qr/the listing database \Q$db\E cannot be (?:used|read)/, "... a log line says so";
open my $fh, '<', $db or die;
read $fh, my $magic, 16;
close $fh;
is $magic, "SQLite format 3\0", '... and it is a database again';
chat('ld-after', 'a turn after the rebuild');
is_deeply listing($s), scan(), 'a turn after the rebuild is listed';

# built in the background: a pool whose builds wait 3 s (SVC_TEST_INDEX_BUILD_DELAY)
$s->stop;
unlink $db or die;
my $b = SvcTest->start(workers => 2, home => $home,
                       env => { SVC_TEST_INDEX_BUILD_DELAY => 3 });
my $t0 = time;
is $b->req(GET => '/api/health')->{status}, 200, 'a pool starting with no database answers health';
my %h;
is_deeply listing($b, \%h), scan(), 'a list while the database is built is whole';
is $h{'x-svc-index'}, 'building', '... and says so (X-Svc-Index: building)';
ok time - $t0 < 2.5, '... at once, not after the build';
SvcTest::wait_for(20, sub { $b->log =~ /built the listing database/ });
like $b->log, qr/building the listing database \Q$db\E in the background/,
    'the build ran in the background, with a log line';
my %h2;
is_deeply listing($b, \%h2), scan(), 'after the build: whole';
ok !exists $h2{'x-svc-index'}, '... from the database (no header)';
is $b->req(GET => "$api?limit=5&cursor=bogus")->{status}, 400, 'a bad cursor: 400';

# a large root (the hook makes every root one): a session copied in is found by a rescan in
# the background, and no list waits for it
system('cp', '-a', "$root/session_ld-07", "$root/session_ld-copy2") == 0 or die;
for my $f ("$root/session_ld-copy2/svc_session.json", "$root/session_ld-copy2/session.json") {
    my $t = SvcTest::read_file($f);
    $t =~ s/"ld-07"/"ld-copy2"/g;
    SvcTest::write_file($f, $t);
}
my $seen = SvcTest::wait_for(20, sub {
    my $r = $b->req(GET => "$api?limit=100&include_archived=true");
    grep { $_->{session_id} eq 'ld-copy2' } @{ $r->{json}{sessions} || [] };
});
ok $seen, 'a session copied into a large root is listed once the background rescan ran';
is_deeply listing($b), scan(), '... and the pages equal the directories';

unlike $b->log, qr/AddressSanitizer|runtime error/, 'no sanitizer report';
$b->stop;

# a reboot (SVC_TEST_BOOT_ID): the database of a pool that stopped in order is used as it
# is; one that a write touched after that, and the machine then crashed, is built anew
SKIP: {
    skip 'no sqlite3 program', 10 unless system('sqlite3 -version >/dev/null 2>&1') == 0;
    my $mark = sub { my $v = `sqlite3 '$db' "SELECT v FROM meta WHERE k = 'boot'"`; chomp $v; $v };
    is $mark->(), 'sealed', 'a pool that stopped in order leaves its database sealed';
    like $b->log, qr/listing database \Q$db\E is on the disk \(sealed\)/, '... and says so';
    my $r = SvcTest->start(workers => 2, home => $home, env => { SVC_TEST_BOOT_ID => 'boot-2' });
    my %h;
    is_deeply listing($r, \%h), scan(), 'after a reboot the pages are whole';
    ok !exists $h{'x-svc-index'}, '... from the sealed database at once (no building header)';
    unlike $r->log, qr/building the listing database|built the listing database|cannot be used/,
        '... which is not built anew';
    is $mark->(), 'sealed', '... and reading it leaves the mark';
    is $r->req(POST => '/api/chat', body => { session_id => 'ld-02', message => 'after the reboot' })
        ->{status}, 200, 'a turn after the reboot';
    listing($r);
    is $mark->(), 'boot-2', 'the first write after it lifts the mark';
    kill 'KILL', -$r->{pid}; # the machine crashes: nothing is flushed or sealed
    $r->stop;
    my $c = SvcTest->start(workers => 2, home => $home, env => { SVC_TEST_BOOT_ID => 'boot-3' });
    is_deeply listing($c), scan(), 'after the crash and a reboot the pages are whole';
    like $c->log, qr/listing database \Q$db\E cannot be used|built the listing database/,
        '... from a database built anew';
    $c->stop;
}
done_testing();
