#!/usr/bin/perl
# The session detail polled again (core/query.c, issue 7): from its second detail of a
# session in a row, a worker watches the session's directories (inotify content watches,
# core/dirwatch.h) and, while nothing there changed, answers from its memo with no lock
# taken and no file read. Whatever another program then does to the session (its sidecar
# rewritten in place or renamed over, turned into a symbolic link, a message file added or
# removed, agents/, agent_<id>/ or messages/ swapped for other directories, the session
# directory removed, put back or swapped, svc_turns.jsonl or .svc.lock turned into a link,
# a run started or killed), the next detail is what a fresh process reads from the disk: the `svc sessions
# show` of the same session, and message_count the number of message files.
# The worker's system calls are observed with strace (that check is skipped without it,
# and with the caches off).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Copy qw(copy);
use JSON::PP;
use Time::HiRes qw(sleep);
use SvcTest;

my $s = SvcTest->start(workers => 1);
my $root = $s->root;
my $aid = 'svc-agent';
my $sid = 'dwatch';
my $svc = SvcTest::build() . '/svc';
my $J = JSON::PP->new->utf8->canonical;

for my $id ($sid, 'dwatch-other') {
    my $r = $s->req(POST => '/api/chat',
                    body => { session_id => $id, messages => [{ role => 'user', content => "hi $id" }] });
    is $r->{status}, 200, "turn on $id";
}

my $sdir = "$root/session_$sid";
my $adir = "$sdir/agents/agent_$aid";
my $mdir = "$adir/messages";
my $side = "$sdir/svc_session.json";
sub files {
    opendir my $h, $mdir or return 0;
    return scalar grep { /^message_\d+\.json$/ } readdir $h;
}
sub detail { $s->req(GET => "/api/v1/chat/sessions/$sid") }
# What a fresh process reads: (exit code, decoded summary or the error line).
sub fresh {
    my $out = `SVC_HOME='${\ $s->home}' '$svc' sessions show '$sid' 2>&1`;
    my $rc = $? >> 8;
    return ($rc, $rc == 0 ? eval { $J->decode($out) } : $out);
}
# The worker answers from its watches from the third detail of a session in a row.
sub settle { detail() for 1 .. 3 }
sub sidecar { $J->decode(SvcTest::read_file($side)) }
sub write_sidecar { # another program: a temporary file renamed over it
    my ($sc) = @_;
    SvcTest::write_file("$side.tmp-other", $J->encode($sc));
    rename "$side.tmp-other", $side or die "rename: $!";
}

# The next detail is what a fresh process reads; returns the detail's summary. A fresh read
# is made before and after the detail: when they differ (a run still writing its
# sidecar), the disk changed meanwhile and the three are read again.
sub agrees {
    my ($what) = @_;
    my ($r, $rc, $want);
    for my $try (1 .. 20) {
        ($rc, $want) = fresh();
        $r = detail();
        my ($rc2, $want2) = fresh();
        last if $rc == $rc2 && $J->encode($want) eq $J->encode($want2);
        sleep 0.1;
    }
    if ($rc == 0) {
        is $r->{status}, 200, "$what: 200 as a fresh read";
        is_deeply $r->{json}, $want, "$what: the summary a fresh process reads"
            or diag explain [$r->{json}, $want];
    } else {
        isnt $r->{status}, 200, "$what: refused as by a fresh read ($want)";
        my $code = $r->{json} && $r->{json}{error} ? $r->{json}{error}{code} : '';
        like $want, qr/\b\Q$code\E\b/, "$what: the same error" if $code;
    }
    return $r->{json};
}

is files(), 2, 'two message files to begin with';
my $d0 = detail()->{json};
is $d0->{message_count}, 2, 'message_count 2';

my ($worker) = $s->worker_pids;

# The worker's system calls during details of the sessions named, in turn: (the answers,
# the trace of each request: up to its log line, the last system call of a request).
sub traced {
    my @ids = @_;
    my $log = $s->home . '/strace.log';
    my $spid = SvcTest::strace_start($worker, $log, '-s', '200', '-e', 'trace=openat,openat2,flock,write');
    my @got = map { $s->req(GET => "/api/v1/chat/sessions/$_") } @ids;
    my $logline = qr/^write\(2, [^\n]*GET \/api\/v1\/chat\/sessions\/[^\s?\/]+ [^\n]*\n/m;
    SvcTest::wait_for(10, sub { my @l = (SvcTest::read_file($log) // '') =~ /$logline/g; @l >= @ids });
    my @req = split $logline, SvcTest::strace_stop($spid, $log);
    return (\@got, \@req);
}

# ---- a repeat with nothing changed takes no lock and reads no file ----
SKIP: {
    skip 'strace not installed', 12 unless system('strace -V >/dev/null 2>&1') == 0;
    skip 'caches off (SVC_TEST_CACHE=off)', 12 if SvcTest::cache_off();
    ok $worker, "the worker ($worker)";
    is $s->req(GET => '/api/v1/chat/sessions/dwatch-other')->{status}, 200, 'another session in between';
    my ($got, $req) = traced(($sid) x 3);
    is scalar(grep { $_->{status} == 200 && $_->{json}{message_count} == 2 } @$got), 3, 'three details, the same';
    like $req->[0] // '', qr/flock\(\d+, LOCK_SH\)/, 'the first after another session: the lock taken';
    like $req->[0] // '', qr/svc_session\.json/, '... and the sidecar read';
    unlike $req->[2] // '', qr/flock\(/, 'the third: no lock' or diag explain $req;
    unlike $req->[2] // '', qr/openat2?\([^\n]*svc_session\.json/, '... and no sidecar opened' or diag explain $req;
    # two sessions polled in turn: both answered from their watches
    ($got, $req) = traced(('dwatch-other', $sid) x 3);
    is scalar(grep { $_->{status} == 200 } @$got), 6, 'two sessions in turn: six details';
    is_deeply [map { $_->{json}{session_id} } @$got], [('dwatch-other', $sid) x 3], 'each its own';
    like $req->[0] // '', qr/flock\(/, 'the other session read again: the lock taken';
    my @late = @$req[2 .. 5];
    is scalar(grep { /flock\(/ } @late), 0, 'then no lock for either' or diag explain $req;
    is scalar(grep { /openat2?\([^\n]*svc_session\.json/ } @late), 0, '... and no sidecar opened';
}

# ---- two sessions polled in turn: a change to either is seen ----
{
    my $other = "$root/session_dwatch-other/svc_session.json";
    $s->req(GET => "/api/v1/chat/sessions/$_") for ('dwatch-other', $sid) x 3;
    my $sc = $J->decode(SvcTest::read_file($other));
    $sc->{title} = 'Other, renamed';
    SvcTest::write_file("$other.tmp", $J->encode($sc));
    rename "$other.tmp", $other or die;
    is $s->req(GET => '/api/v1/chat/sessions/dwatch-other')->{json}{title}, 'Other, renamed',
        'the other session renamed: seen';
    is detail()->{json}{message_count}, 2, 'this one unchanged';
    copy("$root/session_dwatch-other/agents/agent_$aid/messages/message_1.json",
         "$root/session_dwatch-other/agents/agent_$aid/messages/message_2.json") or die;
    is $s->req(GET => '/api/v1/chat/sessions/dwatch-other')->{json}{message_count}, 3,
        'a message file added to the other: seen';
}

# ---- the sidecar rewritten by other processes ----
settle();
is system("SVC_HOME='${\ $s->home}' '$svc' sessions archive '$sid' >/dev/null"), 0, 'svc sessions archive';
is agrees('archived by the svc tool')->{archived}, JSON::PP::true, 'archived: true';
settle();
is system("SVC_HOME='${\ $s->home}' '$svc' sessions unarchive '$sid' >/dev/null"), 0, 'svc sessions unarchive';
is agrees('unarchived by the svc tool')->{archived}, JSON::PP::false, 'archived: false';

settle();
{
    my $sc = sidecar();
    $sc->{title} = 'Renamed by another program';
    write_sidecar($sc);
}
is agrees('sidecar renamed over')->{title}, 'Renamed by another program', 'the new title';

settle();
{ # in place, same size: only a write to the open file tells
    my $t = SvcTest::read_file($side);
    $t =~ s/Renamed by another program/RENAMED BY ANOTHER PROGRAM/ or die;
    open my $fh, '+<', $side or die;
    print $fh $t;
    close $fh;
}
is agrees('sidecar written in place')->{title}, 'RENAMED BY ANOTHER PROGRAM', 'the title written in place';

# ---- message files added and removed by another program ----
settle();
copy("$mdir/message_1.json", "$mdir/message_2.json") or die "copy: $!";
is agrees('a message file added')->{message_count}, 3, 'message_count 3';
settle();
unlink "$mdir/message_2.json" or die;
is agrees('a message file removed')->{message_count}, 2, 'message_count 2 again';

# ---- svc_session.json replaced by a symbolic link ----
settle();
{
    my $sc = sidecar();
    $sc->{title} = 'Through a link';
    SvcTest::write_file($s->home . '/outside.json', $J->encode($sc));
    rename $side, "$side.saved" or die;
    symlink $s->home . '/outside.json', $side or die;
}
my $l = agrees('svc_session.json a symbolic link');
isnt $l && $l->{title}, 'Through a link', 'the link is not followed';
settle();
unlink $side;
rename "$side.saved", $side or die;
is agrees('the sidecar put back')->{title}, 'RENAMED BY ANOTHER PROGRAM', 'the sidecar again';

# ---- svc_turns.jsonl replaced by a symbolic link: refused ----
settle();
rename "$sdir/svc_turns.jsonl", "$sdir/turns.saved" or die;
symlink $s->home . '/outside.json', "$sdir/svc_turns.jsonl" or die;
agrees('svc_turns.jsonl a symbolic link');
isnt detail()->{status}, 200, 'refused again';
unlink "$sdir/svc_turns.jsonl";
rename "$sdir/turns.saved", "$sdir/svc_turns.jsonl" or die;
is agrees('svc_turns.jsonl put back')->{message_count}, 2, 'answered again';

# ---- .svc.lock replaced by a symbolic link: refused as before (only a reader's opening
# of the lock file is no change) ----
settle();
unlink "$sdir/.svc.lock" or die; # no other name involved: only events on .svc.lock
symlink $s->home . '/outside.json', "$sdir/.svc.lock" or die;
agrees('.svc.lock a symbolic link');
unlink "$sdir/.svc.lock";
is agrees('.svc.lock put back')->{message_count}, 2, 'answered again';

# ---- agents/agent_<id>, messages/ and agents/ swapped for other directories ----
sub copy_with_extra { # cp -a FROM TO, one more message file in TO's messages
    my ($from, $to, $msgs) = @_;
    system('cp', '-a', $from, $to) == 0 or die 'cp';
    my $n = () = do { opendir my $h, "$to/$msgs" or die; grep { /^message_\d+\.json$/ } readdir $h };
    copy("$to/$msgs/message_1.json", "$to/$msgs/message_$n.json") or die "copy: $!";
}
settle();
copy_with_extra($adir, "$sdir/agents/agent.new", 'messages');
rename $adir, "$sdir/agents/agent.old" or die;
rename "$sdir/agents/agent.new", $adir or die;
is agrees('agents/agent_<id> swapped')->{message_count}, 3, 'the other directory\'s 3 messages';

settle();
copy_with_extra($mdir, "$adir/messages.new", '.');
rename $mdir, "$adir/messages.old" or die;
rename "$adir/messages.new", $mdir or die;
is agrees('messages/ swapped')->{message_count}, 4, '4 messages';

settle();
copy_with_extra("$sdir/agents", "$sdir/agents.new", "agent_$aid/messages");
rename "$sdir/agents", "$sdir/agents.old" or die;
rename "$sdir/agents.new", "$sdir/agents" or die;
is agrees('agents/ swapped')->{message_count}, 5, '5 messages';

# ---- the session directory removed, put back, swapped ----
settle();
rename $sdir, "$root/saved-$sid" or die;
is detail()->{status}, 404, 'the session directory gone: 404';
agrees('gone');
system('cp', '-a', "$root/saved-$sid", $sdir) == 0 or die;
is agrees('the session directory back')->{message_count}, 5, 'back with its 5 messages';

settle();
system('cp', '-a', $sdir, "$root/new-$sid") == 0 or die;
copy("$mdir/message_1.json", "$root/new-$sid/agents/agent_$aid/messages/message_5.json") or die;
rename $sdir, "$root/old-$sid" or die;
rename "$root/new-$sid", $sdir or die;
is agrees('the session directory swapped')->{message_count}, 6, '6 messages';
settle();
is files(), 6, 'six files';

# ---- the lock files do not matter: another worker's reads change nothing ----
settle();
my $m = $s->req(GET => "/api/v1/chat/sessions/$sid/messages");
is $m->{json}{total}, 6, 'a messages page (the lock opened for writing)';
is agrees('after a page')->{message_count}, 6, 'the same count';

# ---- a run started, then done ----
settle();
my $run = $s->req(POST => '/api/chat/runs',
                  body => { session_id => $sid, messages => [{ role => 'user', content => '/slow 400 a b c d e f' }] });
is $run->{status}, 202, 'a run started' or diag $run->{body};
is agrees('a run started')->{status}, 'running', 'status running';
is agrees('a run going on')->{status}, 'running', 'still running';
$s->wait_run($run->{json}{run_id}, 30);
my $done = agrees('the run done');
isnt $done->{status}, 'running', 'the run is over';
is $done->{message_count}, files(), 'message_count as the files';
ok files() > 6, 'the run wrote messages';

# ---- a run killed: the run lock freed, the sidecar still `running`: repaired as before ----
sub run_holder { # the process holding the session's run lock open
    for my $p (grep { /^\d+$/ } do { opendir my $d, '/proc'; readdir $d }) {
        opendir my $fd, "/proc/$p/fd" or next;
        for (readdir $fd) {
            my $t = readlink "/proc/$p/fd/$_";
            return $p if defined $t && $t eq "$sdir/.svc.run.lock";
        }
    }
    return undef;
}
$run = $s->req(POST => '/api/chat/runs',
               body => { session_id => $sid, messages => [{ role => 'user', content => '/slow 2000 a b c d e f g h' }] });
is $run->{status}, 202, 'a slow run started';
settle();
is detail()->{json}{status}, 'running', 'running';
my $holder = SvcTest::wait_for(10, \&run_holder);
ok $holder && $holder != $worker, "the run's process ($holder), not the worker";
kill 'KILL', $holder;
SvcTest::wait_for(10, sub { !run_holder() });
my $killed = detail()->{json}; # first: a fresh read would repair it
isnt $killed->{status}, 'running', 'the dead run is not reported running';
agrees('the run killed');
$s->wait_run($run->{json}{run_id}, 30);

# ---- a stale `running` (its run lock not held) is repaired as before ----
settle();
{
    my $sc = sidecar();
    $sc->{status} = 'running';
    write_sidecar($sc);
}
my $stale = detail()->{json};
isnt $stale->{status}, 'running', 'a stale running is repaired';
is agrees('after the repair')->{status}, $stale->{status}, 'and stays so';

diag 'server log: ', substr($s->log, -4000) unless Test::More->builder->is_passing;
done_testing;
