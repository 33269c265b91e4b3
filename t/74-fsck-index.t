#!/usr/bin/perl
# svc fsck's check of the index journal (issue 25): a stale row, a missing row and an extra
# row each reported (with the listing database on and off), and the check's memory flat in
# the number of sessions: the peak RSS of fsck on a root of 1,000 sessions and of the same
# root grown to 8,000 differ by a few MB (the journal was held whole in memory before: about
# 6.7 KB a session, some 45 MB more at 8,000).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use SvcCliTest;

my $tmp = File::Temp::tempdir('svc-t-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $gen = gen_sessions_bin($tmp);

sub gen { my ($h, $first, $n) = @_; system($gen, $h->{root}, 's-', $first, $n, 2) == 0 or die "gen_sessions" }
sub index_finding {
    my ($h) = @_;
    my $r = svc($h, 'fsck', '--json');
    my $rep = eval { jdecode($r->{out}) } // {};
    my @ix = grep { $_->{kind} eq 'index' } @{ $rep->{problems} // [] };
    return { rc => $r->{rc}, n => scalar @ix, message => @ix ? $ix[0]{message} : '',
             all => scalar @{ $rep->{problems} // [] } };
}

for my $db (1, 0) {
    my $label = $db ? 'listing database' : 'index_db: false';
    my $h = new_home(sessions_extra => $db ? '' : "  index_db: false\n");
    gen($h, 0, 12);
    is(svc($h, 'sessions', 'list')->{rc}, 0, "$label: a listing builds the index");
    my $f = index_finding($h);
    is_deeply([$f->{rc}, $f->{all}], [0, 0], "$label: a clean root, nothing found");

    # stale: a sidecar changed behind the index's back (no line appended)
    my $sc_path = sidecar_path($h, 's-000004');
    my $sc_text = slurp($sc_path);
    my $sc = json_file($sc_path);
    $sc->{title} = 'renamed by hand';
    spit($sc_path, jencode($sc));
    $f = index_finding($h);
    is($f->{rc}, 1, "$label: stale row: exit 1");
    is($f->{n}, 1, "$label: stale row: one index problem");
    is($f->{message}, 'the index holds an outdated summary of session s-000004',
       "$label: stale row: named");
    spit($sc_path, $sc_text);
    is(index_finding($h)->{rc}, 0, "$label: the sidecar put back: clean");

    # missing: a session written by another program after the index was built
    gen($h, 12, 1);
    $f = index_finding($h);
    is($f->{rc}, 1, "$label: missing row: exit 1");
    is($f->{message}, 'session s-000012 is missing from the index', "$label: missing row: named");
    system('rm', '-rf', "$h->{root}/session_s-000012") == 0 or die;
    is(index_finding($h)->{rc}, 0, "$label: that session removed again: clean");

    # extra: a session directory removed behind the index's back
    system('rm', '-rf', "$h->{root}/session_s-000007") == 0 or die;
    $f = index_finding($h);
    is($f->{rc}, 1, "$label: extra row: exit 1");
    is($f->{message}, 'the index lists 12 sessions, the root holds 11', "$label: extra row: counted");
    my $r = svc($h, 'fsck', '--repair', '--json');
    like(join(' ', map { $_->{message} } @{ jdecode($r->{out})->{problems} }),
         qr/\(rebuilt from the directories\)/, "$label: --repair rebuilds the index");
    is(index_finding($h)->{rc}, 0, "$label: clean after the repair");
}

# memory: fsck's peak RSS (GNU time) at 1,000 sessions and at 8,000
SKIP: {
    skip peak_rss_unreadable(), 4 if peak_rss_unreadable();
    my $h = new_home(sessions_extra => "  index_db: false\n");
    my $peak = sub {
        my $out = "$tmp/time.out";
        local $ENV{SVC_HOME} = $h->{home};
        my $rc = system("/usr/bin/time -f %M -o $out " . svc_bin() . ' fsck >/dev/null 2>&1');
        my ($kb) = (slurp($out) // '') =~ /(\d+)\s*\z/;
        return ($rc >> 8, $kb // 0);
    };
    gen($h, 0, 1000);
    svc($h, 'sessions', 'list');
    my ($rc1, $kb1) = $peak->();
    is($rc1, 0, '1,000 sessions: clean');
    gen($h, 1000, 7000);
    svc($h, 'sessions', 'list');    # the index learns the 7,000 new sessions
    my ($rc8, $kb8) = $peak->();
    is($rc8, 0, '8,000 sessions: clean');
    ok($kb1 > 0 && $kb8 > 0, "peak RSS measured: $kb1 KB, then $kb8 KB");
    cmp_ok($kb8 - $kb1, '<', 12 * 1024, 'eight times the sessions: at most 12 MB more memory');
}

done_testing();
