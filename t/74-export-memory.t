#!/usr/bin/perl
# `svc export --tar` in bounded memory (issue 25): the peak RSS of an export of 10,000
# sessions is within 640 KB of one of 1,000. Before, every selected id was kept in memory
# until the bundle was written (here 106-character ids: about 120 bytes a session, 960 KB
# more); now they wait in a temporary SQLite database with a bounded page cache (hostdb.h;
# a sorted temporary file before issue 36), and 32-280 KB more was seen then. Sessions of 1 message from bench/gen_sessions.c, listed from the
# listing database (built here, 10,000 sessions being the most it builds in the foreground).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use SvcCliTest;
use SvcTest ();

my $time = '/usr/bin/time';
plan skip_all => peak_rss_unreadable() if peak_rss_unreadable();
plan skip_all => 'no listing database with sessions.cache: off' if SvcTest::cache_off();

my $tmp = tempdir('svc-expmem-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $gen = gen_sessions_bin($tmp);
my $prefix = 'export-memory-' . ('x' x 85) . '-';    # 100, gen_sessions' most: ids of 106

sub db_built {
    my ($h) = @_;
    my @db = glob("$h->{home}/search/listing/*.sqlite");
    return scalar @db;
}

# A home of n sessions whose listing database is built.
sub home_of {
    my ($n) = @_;
    my $h = new_home();
    is system($gen, $h->{root}, $prefix, 0, $n, 1), 0, "$n sessions generated";
    my $r = svc($h, 'sessions', 'list', '--limit', '1');
    is $r->{rc}, 0, '  the first list answers' or diag $r->{err};
    # built by this list up to 10,000 sessions, else in the background (a list starts one)
    for (my $until = time + 120; !db_built($h) && time < $until;) {
        sleep 2;
        svc($h, 'sessions', 'list', '--limit', '1');
    }
    ok db_built($h), '  the listing database is built';
    return $h;
}

# Export every session of a home of n as a .tar.gz: the peak RSS in KB.
sub export_rss {
    my ($n) = @_;
    my $h = home_of($n);
    local $ENV{SVC_HOME} = $h->{home};
    delete local $ENV{SVC_CONFIG};
    my $out = `$time -f 'maxrss %M' @{[svc_bin()]} export --tar --include-archived --out $tmp/out$n 2>&1`;
    is $?, 0, "export of $n sessions: exit 0" or diag $out;
    like $out, qr/^exported $n sessions, $n messages/m, "  $n exported";
    my ($tgz) = $out =~ /: (\/\S+\.tar\.gz)$/m;
    my @members = $tgz ? grep { m{/transcripts/.+\.md$} } `tar -tzf $tgz` : ();
    is scalar(@members), $n, "  $n transcripts in the archive";
    my ($kb) = $out =~ /^maxrss (\d+)$/m;
    ok $kb, "  peak RSS read: @{[$kb // '?']} KB";
    return $kb // 0;
}

my $small = export_rss(1000);
my $large = export_rss(10000);
my $more = $large - $small;
cmp_ok $more, "<", 640, "10,000 sessions take less than 640 KB more than 1,000 (took $more KB)";

done_testing;
