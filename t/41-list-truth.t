#!/usr/bin/perl
# A listing that never lies (SPEC 4.3): whatever happens to <root>/.svc_index.jsonl between
# requests (deleted, truncated mid-line or at a line, bytes overwritten, an older copy put
# back, emptied, replaced by a file without a generation line) and whichever worker of
# which pool answers, every page of GET /api/v1/chat/sessions equals a scan of the session
# directories. Then the same under load: clients run turns on fresh sessions while the
# index is deleted and damaged over and over; every answer holds every session whose turn
# had been answered before the listing was asked for.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use Fcntl qw(:flock SEEK_SET O_WRONLY O_APPEND O_CREAT);
use POSIX qw(_exit WNOHANG);
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 2, pools => 2);
is scalar(my @pools = $s->pool_pids), 2, 'two pools serve one root';
my $root = $s->root;
my $index = "$root/.svc_index.jsonl";
my $JSON = JSON::PP->new->utf8->canonical;

sub chat {
    my ($sid, $text) = @_;
    my $r = $s->req(POST => '/api/chat',
                    body => { session_id => $sid, messages => [{ role => 'user', content => $text }] });
    return $r->{status};
}

# The truth: every session directory's sidecar, newest updated_at first (the timestamps all
# have the same form, so they sort as strings), message_count from the files.
sub scan {
    my @rows;
    opendir my $d, $root or die "$root: $!";
    for my $e (sort readdir $d) {
        next unless $e =~ /^session_(.+)$/;
        my $sid = $1;
        my $t = SvcTest::read_file("$root/$e/svc_session.json") // next;
        my $sc = $JSON->decode($t);
        # a turn on a new session writes its sidecar (running) before its messages/ (SPEC 3)
        my $n = 0;
        if (opendir my $m, "$root/$e/agents/agent_$sc->{agent_id}/messages") {
            $n = grep { /^message_\d+\.json$/ } readdir $m;
        }
        push @rows, [$sid, $sc->{updated_at}, $sc->{status}, $sc->{title}, $sc->{archived} ? 1 : 0, $n];
    }
    return [sort { $b->[1] cmp $a->[1] || $a->[0] cmp $b->[0] } @rows];
}

# Every page, 7 at a time unless told, archived included.
sub listing {
    my ($limit) = @_;
    my (@rows, $cursor);
    for (1 .. 1000) {
        my $q = '/api/v1/chat/sessions?limit=' . ($limit // 7) . '&include_archived=true';
        $q .= "&cursor=$cursor" if defined $cursor;
        my $r = $s->req(GET => $q);
        return "status $r->{status}: $r->{body}" unless $r->{status} == 200 && $r->{json};
        push @rows, map { [$_->{session_id}, $_->{updated_at}, $_->{status}, $_->{title},
                           $_->{archived} ? 1 : 0, $_->{message_count}] } @{ $r->{json}{sessions} };
        $cursor = $r->{json}{next_cursor} // last;
    }
    return \@rows;
}

# Four whole listings (four workers in two pools): each must equal the scan.
sub check {
    my ($what, $limit) = @_;
    my $want = scan();
    my $bad = 0;
    for my $round (1 .. 4) {
        my $got = listing($limit);
        next if ref $got && $JSON->encode($got) eq $JSON->encode($want);
        $bad++;
        diag "$what, listing $round: " . (ref $got ? scalar(@$got) . " rows" : $got)
            . ", scan " . scalar(@$want) . " rows";
        if (ref $got) {
            my %g = map { $_->[0] => $JSON->encode($_) } @$got;
            for my $w (@$want) {
                my $e = $JSON->encode($w);
                diag "  want $e\n  got  " . ($g{$w->[0]} // 'nothing') if ($g{$w->[0]} // '') ne $e;
            }
        }
    }
    is $bad, 0, "$what: every listing equals the directories";
}

sub damage_write {
    my ($text) = @_;
    open my $fh, '>', $index or die "$index: $!";
    print $fh $text;
    close $fh;
}

my $ok = grep { chat(sprintf('lt-%02d', $_), "question $_") == 200 } 1 .. 24;
is $ok, 24, '24 turns answered';
is scalar @{ scan() }, 24, '24 sessions on disk';
check('to begin with');

# the issue's case: a turn and a list, then the index deleted
chat('lt-03', 'again');
listing();
unlink $index or die "unlink: $!";
check('index deleted after a turn and a list');

chat('lt-05', 'more');
ok -s $index, 'the index exists again';
truncate $index, int((-s $index) / 2) or die "truncate: $!";
check('index truncated inside a line');

# renames append lines at the end; cutting the last ones leaves older summaries behind
$s->req(PATCH => "/api/v1/chat/sessions/lt-0$_", body => { title => "Renamed $_ ÄÖÜ" }) for 1 .. 4;
{
    my $t = SvcTest::read_file($index);
    my @lines = split /(?<=\n)/, $t;
    ok @lines > 3, 'the index has lines';
    truncate $index, length($t) - length($lines[-1]) - length($lines[-2]) or die;
}
check('the last lines of the index cut at a line boundary');

$s->req(POST => '/api/v1/chat/sessions/lt-07/archive');
chat('lt-08', 'x');
{
    open my $fh, '+<', $index or die;
    seek $fh, int((-s $index) / 3), SEEK_SET;
    print $fh 'X' x 40;
    close $fh;
}
check('bytes in the middle of the index overwritten');

my $old = SvcTest::read_file($index);
chat("lt-1$_", 'newer') for 0 .. 3;
$s->req(POST => '/api/v1/chat/sessions/lt-07/unarchive');
chat('lt-25', 'a new session');
damage_write($old);
check('an older copy of the index put back');

damage_write('');
check('an empty index');
chat('lt-09', 'y');
damage_write("not json at all\n{\"session_id\":\"lt-01\"\n");
check('an index of garbage');
chat('lt-26', 'z');
damage_write('{"session_id":"lt-26","summary":' . $JSON->encode({ session_id => 'lt-26', title => 'only me',
    updated_at => '2030-01-01T00:00:00.000000+00:00', status => 'idle' }) . "}\n");
check('an index of one line without a generation');

# a session made by another program (no sidecar) is not listed as anything else: the
# index's record of a removed session goes when its directory goes
system('rm', '-rf', "$root/session_lt-24") == 0 or die;
check('a session directory removed');

# ---- under load: 2 pools, turns on fresh sessions, the index damaged over and over ----
my $done = $s->home . '/done.txt';
my @kids;
my $stop = $s->home . '/stop';
my $parent = $$;
END {    # if this process dies, the children (which leave with _exit) must stop too
    if (defined $parent && $$ == $parent && !-e $stop) { open my $f, '>', $stop; close $f if $f }
}
for my $c (1 .. 4) {
    my $pid = fork // die;
    if (!$pid) {
        my $n = 0;
        while (!-e $stop && $n < 150) { # a root of at most 600 new sessions: every listing
                                        # under the vandal reads it whole
            my $sid = sprintf('load-%d-%03d', $c, $n++);
            my $st = chat($sid, "load $sid");
            print STDERR "load $sid: $st\n" if $st != 200;
            next unless $st == 200;
            sysopen my $fh, $done, O_WRONLY | O_APPEND | O_CREAT or _exit(1);
            syswrite $fh, "$sid\n";
            close $fh;
        }
        _exit(0);
    }
    push @kids, $pid;
}
my $vandal = fork // die;
if (!$vandal) {
    my $k = 0;
    while (!-e $stop) {
        my $how = $k++ % 3;
        if ($how == 0) { unlink $index }
        elsif ($how == 1) { truncate $index, int((-s $index // 0) / 2) }
        elsif (open my $fh, '+<', $index) { seek $fh, 10, SEEK_SET; print $fh '}{'; close $fh }
        sleep 0.1;
    }
    _exit(0);
}
my ($answers, $short, $failed) = (0, 0, 0);
my $t_end = time + 120;
# the load goes on until 4 listings were asked while at least 20 turns were answered (so
# however fast turns are, the listings meet a root that changes under them)
while (time < $t_end) { # the vandal goes on once the clients are done
    my %known = map { $_ => 1 } split /\n/, (SvcTest::read_file($done) // '');
    last if $answers >= 4 && keys(%known) >= 20;
    $known{$_->[0]} = 1 for grep { $_->[0] =~ /^lt-/ } @{ scan() };
    my $got = listing(50);
    $answers++;
    if (!ref $got) { $failed++; diag $got; next }
    my %have;
    $have{$_->[0]}++ for @$got;
    my @missing = grep { !$have{$_} } sort keys %known;
    my @dups = grep { $have{$_} > 1 } keys %have;
    if (@missing || @dups) {
        $short++;
        diag "a listing of " . scalar(@$got) . " misses " . scalar(@missing) . " of "
            . scalar(keys %known) . " (@missing[0 .. ($#missing < 4 ? $#missing : 4)]), "
            . scalar(@dups) . " twice";
    }
}
open my $sf, '>', $stop or die;
close $sf;
waitpid($_, 0) for @kids, $vandal;
ok $answers >= 3, "listings asked under load ($answers)";
is $failed, 0, 'every listing under load answered 200';
is $short, 0, 'no listing under load missed a session whose turn had been answered';
my $made = my @made = split /\n/, (SvcTest::read_file($done) // '');
ok $made >= 20, "sessions made under load ($made)";
check('after the load', 100);

unlike $s->log, qr/AddressSanitizer|runtime error/, 'no sanitizer report';
done_testing();
