#!/usr/bin/perl
# A worker keeps the rows of the messages pages it rendered (core/msgcache.h) and answers a
# page read before with no file opened and no stat while the messages directory's inotify
# watch, armed before the rows were checked, saw no change (one stat per row otherwise:
# what sees another host's write, core/cache.h). A row is served again only
# while its file is the one it was rendered from: rewritten in place with the same size and
# its mtime set back (again right after a page read it), replaced by a rename, or turned
# into a symbolic link, the next page shows what is on disk now. The rule that keeps a file
# changed less than a second ago out of the cache (a rewrite within one tick of the clock)
# is checked with made-up stat records in t/unit/msgcache.c.
# The worker's system calls are observed with strace (the check is skipped without it, and
# with the caches off, SVC_TEST_CACHE=off, where every page reads its files).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time sleep);
use SvcTest;

my $s = SvcTest->start(workers => 1);
my $root = $s->root;
my $sid = 'mcache';
my $mdir = "$root/session_$sid/agents/agent_svc-agent/messages";
for my $i (0 .. 2) {
    my $r = $s->req(POST => '/api/chat',
                    body => { session_id => $sid, messages => [{ role => 'user', content => "hello $i" }] });
    is $r->{status}, 200, "turn $i";
}
my $page = "/api/v1/chat/sessions/$sid/messages?limit=200";
sub page { my $r = $s->req(GET => $page); $r->{status} == 200 ? $r->{json}{messages} : undef }
sub content_of { my ($rows, $id) = @_; my ($row) = grep { $_->{message_id} == $id } @$rows; $row }

# rows are kept only for files that last changed a second ago or more
sleep 1.2;
my $first = page();
is scalar @$first, 6, 'six rows';
is content_of($first, 2)->{content}, 'hello 1', 'row 2 as written';

# ---- a page read before opens no message file ----
SKIP: {
    skip 'strace not installed', 7 unless system('strace -V >/dev/null 2>&1') == 0;
    skip 'caches off (SVC_TEST_CACHE=off)', 7 if SvcTest::cache_off();
    my ($worker) = $s->worker_pids;
    ok $worker, "the worker ($worker)";
    my $log = $s->home . '/strace.log';
    my $spid = SvcTest::strace_start($worker, $log, '-e', 'trace=openat,newfstatat,statx');
    my $again = page();
    my $mark = -s $log;
    my $third = page();
    my $trace = SvcTest::strace_stop($spid, $log);
    my $trace3 = substr $trace, $mark;
    $trace = substr $trace, 0, $mark;
    is_deeply $again, $first, 'the page again: the same rows';
    my @opened = $trace =~ /openat\([^\n]*"message_\d+\.json"/g;
    my @stated = $trace =~ /(?:newfstatat|statx)\([^\n]*"message_\d+\.json"/g;
    is scalar @opened, 0, 'no message file opened' or diag $trace;
    is scalar @stated, 0, 'no stat: the directory saw no change' or diag $trace;
    is_deeply $third, $first, 'a third time: the same rows';
    @opened = $trace3 =~ /openat\([^\n]*"message_\d+\.json"/g;
    @stated = $trace3 =~ /(?:newfstatat|statx)\([^\n]*"message_\d+\.json"/g;
    is scalar @opened, 0, 'no message file opened';
    is scalar @stated, 0, 'and none again' or diag $trace3;
}

# rewrite in place: same size, mtime set back to what it was
sub set_bytes { SvcTest::rewrite_in_place(@_) }

# ---- rewritten in place, same size, mtime set back ----
ok set_bytes("$mdir/message_2.json", 'hello 1', 'HELLO 1'), 'message_2.json rewritten: same size and mtime';
my $rows = page();
is content_of($rows, 2)->{content}, 'HELLO 1', 'the page shows the rewrite';
is content_of($rows, 0)->{content}, 'hello 0', 'other rows unchanged';

# ---- rewritten again right after a page read it ----
ok set_bytes("$mdir/message_2.json", 'HELLO 1', 'HeLLo 1'), 'rewritten again at once';
is content_of(page(), 2)->{content}, 'HeLLo 1', 'the page shows the second rewrite';
ok set_bytes("$mdir/message_2.json", 'HeLLo 1', 'hEllO 1'), 'and a third time';
is content_of(page(), 2)->{content}, 'hEllO 1', 'the page shows the third';

# ---- replaced by a rename with the same size and mtime ----
{
    my $f = "$mdir/message_4.json";
    my @st = stat $f;
    my $t = SvcTest::read_file($f);
    $t =~ s/hello 2/HELLO 2/ or die;
    SvcTest::write_file("$f.new", $t);
    utime $st[8], $st[9], "$f.new";
    rename "$f.new", $f or die;
    is content_of(page(), 4)->{content}, 'HELLO 2', 'a file renamed over it: the new content';
}

# ---- turned into a symbolic link ----
{
    my $f = "$mdir/message_0.json";
    SvcTest::write_file($s->home . '/outside.json', SvcTest::read_file($f));
    unlink $f;
    symlink $s->home . '/outside.json', $f or die;
    my $row = content_of(page(), 0);
    is $row->{role}, 'unknown', 'a symbolic link is not served from the cache';
    like $row->{error}, qr/symbolic link/, 'its row says why';
    unlink $f;
    SvcTest::write_file($f, SvcTest::read_file($s->home . '/outside.json'));
    is content_of(page(), 0)->{content}, 'hello 0', 'a regular file again: its row again';
}

# ---- the agent's directory swapped for one whose messages are the same files (hard
# links): the watched directory saw nothing, yet a file changed through the new one shows ----
{
    sleep 1.2;            # every file settled (msgcache.h)
    page() for 1 .. 2;    # the rows cached and the directory watched
    my $adir = "$root/session_$sid/agents";
    mkdir "$adir/agent_new" or die;
    mkdir "$adir/agent_new/messages" or die;
    link "$adir/agent_svc-agent/agent.json", "$adir/agent_new/agent.json" or die;
    for my $f (glob "$mdir/message_*.json") {
        (my $b = $f) =~ s{.*/}{};
        link $f, "$adir/agent_new/messages/$b" or die "$f: $!";
    }
    rename "$adir/agent_svc-agent", "$adir/agent_old" or die;
    rename "$adir/agent_new", "$adir/agent_svc-agent" or die;
    ok set_bytes("$mdir/message_4.json", 'HELLO 2', 'HeLLO 2'), 'a file rewritten through the new directory';
    is content_of(page(), 4)->{content}, 'HeLLO 2', 'the page shows it';
    system('rm', '-rf', "$adir/agent_old");
}

# ---- a file with a second name in another directory: its row is checked by its stat on
# each page, so a rewrite through that name (no event in the watched directory) shows ----
{
    my $other = $s->home . '/second-name.json';
    link "$mdir/message_2.json", $other or die "link: $!";
    sleep 1.2;                                # its ctime (the link) settled: its row kept
    SvcTest::write_file("$mdir/tick", '');    # a change in the directory: rows checked again
    unlink "$mdir/tick";
    page() for 1 .. 2;
    ok set_bytes($other, 'hEllO 1', 'HELLo 1'), 'message_2.json rewritten through its other name';
    is content_of(page(), 2)->{content}, 'HELLo 1', 'the page shows it';
    unlink $other;
}

# ---- the session still works, and its new messages are paged ----
my $r = $s->req(POST => '/api/chat', body => { session_id => $sid, messages => [{ role => 'user', content => 'hello 3' }] });
is $r->{status}, 200, 'another turn';
$rows = page();
is scalar @$rows, 8, 'eight rows';
is content_of($rows, 6)->{content}, 'hello 3', 'the new message is there';
done_testing();
