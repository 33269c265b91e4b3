#!/usr/bin/perl
# The listing database is built from the journal in bounded memory (issue 25): the peak RSS
# of a `svc sessions list` that builds it (the journal whole, the database deleted) is
# within a few megabytes for 3,500 sessions of what it is for 700. Before, the build loaded
# the journal into memory first (each session's folded title, tags and sort keys: here 2 KB
# titles, about 2 KB a session: 5.8 MB more). Sessions from bench/gen_sessions.c.
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

my $tmp = tempdir('svc-dbmem-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $gen = gen_sessions_bin($tmp);

# A home of n sessions with 2,000-character titles, its journal written by a first list.
sub home_of {
    my ($n) = @_;
    my $h = new_home();
    is system($gen, $h->{root}, 's-', 0, $n, 2), 0, "$n sessions generated";
    for my $f (glob "$h->{root}/session_*/svc_session.json") {
        my $t = SvcTest::read_file($f);
        my $long = join ' ', map { "word$_" } 1 .. 250;
        $t =~ s/"title": "([^"]*)"/"title": "$1 $long"/ or die "no title in $f";
        open my $o, '>', $f or die "$f: $!";
        print $o $t;
        close $o;
    }
    my $r = svc($h, 'sessions', 'list', '--limit', '1');
    is $r->{rc}, 0, "  the first list answers" or diag $r->{err};
    ok -s "$h->{root}/.svc_index.jsonl", '  the journal is written';
    return $h;
}

# Delete the listing database and list once: the peak RSS (KB) of the list that builds it.
sub build_rss {
    my ($n, $h) = @_;
    system('rm', '-rf', "$h->{home}/search");
    local $ENV{SVC_HOME} = $h->{home};
    delete local $ENV{SVC_CONFIG};
    my $out = `$time -f 'maxrss %M' @{[svc_bin()]} sessions list --limit 1 2>&1`;
    is $?, 0, "list of $n sessions: exit 0" or diag $out;
    like $out, qr/built the listing database .*\($n sessions/, "  it built the database";
    my ($kb) = $out =~ /^maxrss (\d+)$/m;
    ok $kb, "  peak RSS read: @{[$kb // '?']} KB";
    my $r = svc($h, 'sessions', 'list', '--limit', '500', '--all');
    is scalar(@{ jdecode($r->{out})->{sessions} }), ($n < 500 ? $n : 500), '  the list is whole';
    return $kb // 0;
}

my $small = build_rss(700, home_of(700));
my $large = build_rss(3500, home_of(3500));
my $more = $large - $small;
cmp_ok $more, '<', 3072, "3,500 sessions take less than 3 MB more than 700 (took $more KB)";

done_testing;
