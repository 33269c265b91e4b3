#!/usr/bin/perl
# A request's cost does not grow with the session's history (SPEC 2.1, 4.3): a messages
# page opens only the message files it returns and lists no directory; a turn restores
# only the window's files. The count is trusted under the lock and checked with a stat or
# two, so when another program (a Strands agent) adds a message file, the listing, the
# detail and the messages page all notice it and agree on message_count.
# Files opened are observed with strace (the test is skipped without it).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

plan skip_all => 'strace not installed' unless system('strace -V >/dev/null 2>&1') == 0;

# Run svc under strace; returns (exit status, [openat paths], number of getdents64 calls).
sub traced {
    my ($h, @args) = @_;
    my $log = "$h->{home}/strace.log";
    {
        local $ENV{SVC_HOME} = $h->{home};
        delete local $ENV{SVC_CONFIG};
        # LeakSanitizer cannot run under ptrace (make asan)
        local $ENV{ASAN_OPTIONS} = join ':', grep { length } $ENV{ASAN_OPTIONS} // '', 'detect_leaks=0';
        open(my $save, '>&', \*STDOUT) or die;
        open(STDOUT, '>', '/dev/null') or die;
        my $st = system('strace', '-f', '-qq', '-o', $log, '-e', 'trace=openat,getdents64',
            svc_bin(), @args);
        open(STDOUT, '>&', $save) or die;
        return (1, [], 0) if $st != 0;
    }
    my (@open, $dents);
    for (split /\n/, slurp($log) // '') {
        push @open, $1 if /openat\([^,]+, "([^"]+)"/ && !/ = -1 /;
        $dents++ if /getdents64\(/;
    }
    return (0, \@open, $dents // 0);
}
sub message_reads { scalar grep { m{(?:^|/)message_\d+\.json$} } @{ $_[0] } } # relative: openat on the directory

# memory sync (on by default) reads the newest messages itself, after the run: off here,
# so that the files a turn opens are the restore's
my $h = new_home(sessions_extra => "  sync_memory: false\n", yaml_extra => "agent:\n  window_size: 6\n");
my $sid = 'long';
for my $i (1 .. 15) {
    my $r = svc($h, 'chat', $sid, "turn $i");
    die "turn $i: $r->{err}" if $r->{rc};
}
is(scalar(my @ids = msg_ids($h, $sid)), 30, '30 message files');

my ($rc, $open, $dents) = traced($h, 'sessions', 'messages', $sid, '--limit', '3', '--desc');
is($rc, 0, 'messages page');
is(message_reads($open), 3, 'a page of 3 opens 3 message files');
is($dents, 0, 'and lists no directory');

($rc, $open, $dents) = traced($h, 'sessions', 'show', $sid);
is($rc, 0, 'detail');
is(message_reads($open), 0, 'the detail opens no message file');
is($dents, 0, 'and lists no directory');

($rc, $open) = traced($h, 'chat', $sid, 'one more');
is($rc, 0, 'a turn on the long session');
my $reads = grep { m{(?:^|/)message_\d+\.json$} } @$open;
ok($reads >= 1 && $reads <= 8, "the turn reads the window's files only ($reads of 30)");

# another program adds message_32.json (as Strands would)
my $md = msg_dir($h, $sid);
my $rec = jdecode(slurp("$md/message_31.json"));
$rec->{message_id} = 32;
spit("$md/message_32.json", jencode($rec));
my $show = jdecode(svc($h, 'sessions', 'show', $sid)->{out});
is($show->{message_count}, 33, 'detail counts the added file');
my $page = jdecode(svc($h, 'sessions', 'messages', $sid, '--limit', '2', '--desc')->{out});
is($page->{total}, 33, 'messages total counts it');
is($page->{messages}[0]{message_id}, 32, 'and the newest row is the added message');
my ($l) = grep { $_->{session_id} eq $sid }
    @{ jdecode(svc($h, 'sessions', 'list')->{out})->{sessions} };
is($l->{message_count}, 33, 'the listing agrees');
my $r = svc($h, 'chat', $sid, 'after the added file');
is($r->{rc}, 0, 'a turn after it') or diag $r->{err};
is_deeply([msg_ids($h, $sid)], [0 .. 34], 'ids continue after the added file');
is(json_file(sidecar_path($h, $sid))->{message_count}, 35, 'the sidecar counts it');

# another program removes a message file inside the window: the count no longer holds,
# the run scans instead, restores what is there and the counts stay true
unlink("$md/message_33.json") or die;
$r = svc($h, 'chat', $sid, 'after a removed file');
is($r->{rc}, 0, 'a turn after a file was removed') or diag $r->{err};
my @left = msg_ids($h, $sid);
is(scalar @left, 36, '36 files (35 - 1 + 2)');
is($left[-1], 36, 'ids continue after the largest');
is(jdecode(svc($h, 'sessions', 'show', $sid)->{out})->{message_count}, 36, 'detail counts the files');
is(jdecode(svc($h, 'sessions', 'messages', $sid, '--limit', '1')->{out})->{total}, 36,
    'messages total counts the files');

done_testing();
