#!/usr/bin/perl
# `svc import` in bounded memory (issue 25): checking a bundle of 20,000 sessions (--dry-run)
# peaks within 2.5 MB of checking one of 1,000 (956 and 1,652 KB more in two runs: malloc's
# heap and the buckets' fill vary). Before the records went to disk (now a temporary SQLite
# database, hostdb.h) a record a session and the report's ids stayed in memory, about 165
# bytes a session: 3.5 to 4.8 MB more here (and before that the manifest was parsed whole,
# about 13 KB a session). A real import of
# 1,000 sessions peaks near its check; SVC_TEST_IMPORT_BIG=1 also imports the 20,000 for
# real and bounds it (placing 20,000 sessions of small files takes 10 to 45 s more on a
# shared 2-core machine, too long for every run). The skipped and failed sessions read back
# from disk: t/71-import.t. Each bundle is a .tar.gz of bench/gen_sessions.c's sessions of
# one message, exported by `svc export`.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use SvcCliTest;

my $time = '/usr/bin/time';
plan skip_all => peak_rss_unreadable() if peak_rss_unreadable();

my $tmp = tempdir('svc-impmem-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $gen = gen_sessions_bin($tmp);
my ($SMALL, $LARGE) = (1000, 20000);

# A .tar.gz bundle of n sessions of 1 message.
sub bundle_of {
    my ($n) = @_;
    my $src = new_home();
    is system($gen, $src->{root}, 's-', 0, $n, 1), 0, "$n sessions generated";
    my $r = svc($src, 'export', '--tar', '--out', "$tmp/out$n");
    is $r->{rc}, 0, "export of $n sessions" or diag $r->{err};
    my ($tgz) = $r->{out} =~ /: (\/\S+\.tar\.gz)$/m;
    ok $tgz && -f $tgz, "bundle of $n sessions";
    return $tgz;
}

# Import a bundle into an empty home (--dry-run: check it only): the peak RSS in KB.
sub import_rss {
    my ($n, $tgz, $dry) = @_;
    my $home = new_home();
    local $ENV{SVC_HOME} = $home->{home};
    delete local $ENV{SVC_CONFIG};
    my $how = $dry ? 'check' : 'import';
    my $out = `$time -f 'maxrss %M' @{[svc_bin()]} import @{[$dry ? '--dry-run' : '']} $tgz 2>&1`;
    is $?, 0, "$how of $n sessions: exit 0" or diag $out;
    my $verb = $dry ? 'would import' : 'imported';
    like $out, qr/^$verb $n sessions, skipped 0, failed 0/m, "  $n counted";
    my ($kb) = $out =~ /^maxrss (\d+)$/m;
    ok $kb, "  peak RSS read: @{[$kb // '?']} KB";
    my $d;
    my @dirs = opendir($d, $home->{root}) ? grep { /^session_/ } readdir $d : ();
    is scalar(@dirs), $dry ? 0 : $n, "  @{[$dry ? 0 : $n]} session directories";
    return $kb // 0;
}

my %tgz = map { $_ => bundle_of($_) } $SMALL, $LARGE;
my $small = import_rss($SMALL, $tgz{$SMALL}, 1);
my $large = import_rss($LARGE, $tgz{$LARGE}, 1);
my $more = $large - $small;
cmp_ok $more, '<', 2560, "checking 20,000 sessions takes less than 2.5 MB more than 1,000 "
    . "(took $more KB)";
my $real = import_rss($SMALL, $tgz{$SMALL}, 0);
cmp_ok $real - $small, '<', 3072, "an import of 1,000 peaks within 3 MB of its check ($real KB)";
if ($ENV{SVC_TEST_IMPORT_BIG}) {
    my $big = import_rss($LARGE, $tgz{$LARGE}, 0);
    cmp_ok $big - $real, '<', 3072, "an import of 20,000 takes less than 3 MB more than one of "
        . "1,000 (took @{[$big - $real]} KB)";
    cmp_ok $big, '<', 32 * 1024, "an import of 20,000 sessions peaks under 32 MB ($big KB)";
}

done_testing;
