#!/usr/bin/perl
# `svc import` in bounded memory (issue 25): the peak RSS of an import of 3,000 sessions is
# within a few megabytes of one of 600 (before: about 13 KB more a session, 30 MB more
# here: the manifest parsed whole, every file's path and digest twice, 750 bytes a session).
# Each bundle is a .tar.gz of bench/gen_sessions.c's sessions, exported by `svc export`.
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

# A .tar.gz bundle of n sessions of 2 messages.
sub bundle_of {
    my ($n) = @_;
    my $src = new_home();
    is system($gen, $src->{root}, 's-', 0, $n, 2), 0, "$n sessions generated";
    my $r = svc($src, 'export', '--tar', '--out', "$tmp/out$n");
    is $r->{rc}, 0, "export of $n sessions" or diag $r->{err};
    my ($tgz) = $r->{out} =~ /: (\/\S+\.tar\.gz)$/m;
    ok $tgz && -f $tgz, "bundle of $n sessions";
    return $tgz;
}

# Import a bundle into an empty home: the peak RSS in KB.
sub import_rss {
    my ($n, $tgz) = @_;
    my $home = new_home();
    local $ENV{SVC_HOME} = $home->{home};
    delete local $ENV{SVC_CONFIG};
    my $out = `$time -f 'maxrss %M' @{[svc_bin()]} import $tgz 2>&1`;
    is $?, 0, "import of $n sessions: exit 0" or diag $out;
    like $out, qr/^imported $n sessions, skipped 0, failed 0/m, "  $n imported";
    my ($kb) = $out =~ /^maxrss (\d+)$/m;
    ok $kb, "  peak RSS read: @{[$kb // '?']} KB";
    opendir(my $d, $home->{root});
    is scalar(grep { /^session_/ } readdir $d), $n, "  $n session directories";
    return $kb // 0;
}

my $small = import_rss(600, bundle_of(600));
my $large = import_rss(3000, bundle_of(3000));
my $more = $large - $small;
cmp_ok $more, '<', 6144, "3,000 sessions take less than 6 MB more than 600 (took $more KB)";
cmp_ok $large, '<', 32 * 1024, "an import of 3,000 sessions peaks under 32 MB ($large KB)";

done_testing;
