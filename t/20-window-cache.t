#!/usr/bin/perl
# A worker keeps the messages of the windows it restored (core/wincache.h) and, on the next
# turn of the session, reads from disk only the message files that changed since it read
# them: the files other turns added, or that another program rewrote, renamed over or
# removed. What it knows is checked against inotify events on the messages directory (the
# watch is armed before the files are read) and each file's stat, so the model is always
# given what is on disk.
# Checked on the requests a fake OpenAI server (t/lib/FakeOpenAI.pm) recorded; the files a
# turn opens are observed with strace on the worker (that check is skipped without it, and
# with the caches off).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use JSON::PP;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $fake = FakeOpenAI->start;
# memory sync off: the files a turn opens are the restore's
my $s = SvcTest->start(workers => 1, config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: sk-x\nagent:\n  window_size: 40\nsessions:\n  sync_memory: false\n");
my $root = $s->root;
my $sid = 'wcache';
my $mdir = "$root/session_$sid/agents/agent_svc-agent/messages";

sub turn {
    my ($text) = @_;
    my $r = $s->req(POST => '/api/chat', body => { session_id => $sid, message => $text });
    return $r->{status} == 200 ? $fake->request_for($text) : undef;
}
# the contents of the user and assistant messages the model was given, oldest first
sub given { my ($body) = @_; [ map { ref $_->{content} ? '' : $_->{content} } grep { $_->{role} ne 'system' } @{ $body->{messages} || [] } ] }
sub given_has { my ($body, $text) = @_; scalar grep { $_ eq $text } @{ given($body) } }

for my $i (0 .. 2) {
    ok turn("hello $i"), "turn $i";
}
my $bd = turn('hello 3');
is given($bd)->[0], 'hello 0', 'the window starts with the first turn';
is scalar @{ given($bd) }, 7, 'three turns restored, and the input';

# ---- a turn opens only the files it has not read since they changed ----
SKIP: {
    my $why = system('strace -V >/dev/null 2>&1') != 0 ? 'strace not installed'
            : SvcTest::cache_off() ? 'caches off (SVC_TEST_CACHE=off)' : '';
    if ($why) { # the turn all the same: the tests below count on it
        ok turn('hello 4'), "turn 4 ($why: not traced)";
        skip $why, 3;
    }
    my ($worker) = $s->worker_pids;
    ok $worker, "the worker ($worker)";
    my $log = $s->home . '/strace.log';
    my $spid = SvcTest::strace_start($worker, $log, '-e', 'trace=openat,newfstatat,statx');
    my $body = turn('hello 4');
    my $trace = SvcTest::strace_stop($spid, $log);
    my @opened = $trace =~ /openat\([^\n]*"message_(\d+)\.json", O_RDONLY/g;
    is_deeply \@opened, [], 'the turn read no message file: it knows the files the turn before wrote'
        or diag $trace;
    # the window's files are not stated either: no event named them (the two the turn
    # writes are: each is stated once, after its rename, to be kept)
    my @stated = $trace =~ /(?:newfstatat|statx)\([^\n]*"message_(\d+)\.json"/g;
    ok @stated <= 2, 'nor stated (' . scalar(@stated) . ' stats of message files)' or diag $trace;
    ok given_has($body, 'hello 1'), 'and the model was given the older ones all the same';
}

# In place: the same size, the mtime set back (no stat field but ctime tells).
sub set_bytes { SvcTest::rewrite_in_place(@_) }
# message id of the user message "hello N"
sub id_of { my ($text) = @_; for my $f (glob "$mdir/message_*.json") { return $1 if SvcTest::read_file($f) =~ /"\Q$text\E"/ && $f =~ /message_(\d+)\.json$/ } undef }

# ---- rewritten in place by another program ----
my $id2 = id_of('hello 2');
ok set_bytes("$mdir/message_$id2.json", 'hello 2', 'HELLO 2'), "message_$id2.json rewritten in place";
$bd = turn('hello 5');
ok given_has($bd, 'HELLO 2') && !given_has($bd, 'hello 2'), 'the next turn gives the model the rewrite'
    or diag explain given($bd);
ok set_bytes("$mdir/message_$id2.json", 'HELLO 2', 'HeLLo 2'), 'rewritten again at once';
$bd = turn('hello 6');
ok given_has($bd, 'HeLLo 2'), 'the next turn gives the model the second rewrite' or diag explain given($bd);

# ---- the answer the worker has just written, rewritten in place at once ----
{
    my ($aid) = grep { SvcTest::read_file("$mdir/message_$_.json") =~ /You said: hello 6 / }
        map { /message_(\d+)\.json$/ ? $1 : () } glob "$mdir/message_*.json";
    ok defined $aid && set_bytes("$mdir/message_$aid.json", 'You said: hello 6', 'YOU SAID: hello 6'),
        'the newest answer rewritten in place';
    my $x = turn('hello 6b');
    ok scalar(grep { /^YOU SAID: hello 6 / } @{ given($x) }), 'the next turn gives the model the rewrite'
        or diag explain given($x);
}

# ---- renamed over ----
my $id3 = id_of('hello 3');
{
    my $f = "$mdir/message_$id3.json";
    my $t = SvcTest::read_file($f);
    $t =~ s/hello 3/HELLO 3/ or die;
    SvcTest::write_file("$f.new", $t);
    rename "$f.new", $f or die;
}
$bd = turn('hello 7');
ok given_has($bd, 'HELLO 3') && !given_has($bd, 'hello 3'), 'a file renamed over it: the model is given the new one'
    or diag explain given($bd);
# ---- the answer the worker has just written, renamed over at once ----
{
    my ($aid) = grep { SvcTest::read_file("$mdir/message_$_.json") =~ /You said: hello 7 / }
        map { /message_(\d+)\.json$/ ? $1 : () } glob "$mdir/message_*.json";
    my $f = "$mdir/message_$aid.json";
    my $t = SvcTest::read_file($f);
    $t =~ s/You said: hello 7/Renamed: hello 7/ or die;
    SvcTest::write_file("$f.new", $t);
    rename "$f.new", $f or die;
    my $x = turn('hello 7b');
    ok scalar(grep { /^Renamed: hello 7/ } @{ given($x) }), 'the newest answer renamed over: the model is given the new one'
        or diag explain given($x);
}

# ---- removed ----
my $id4 = id_of('hello 4');
{
    my $f = "$mdir/message_$id4.json";
    my $t = SvcTest::read_file($f);
    unlink $f or die;
    $bd = turn('hello 8');
    ok $bd && !given_has($bd, 'hello 4'), 'a removed file: the model is not given it' or diag explain given($bd);
}

# ---- the agent's directory swapped for a copy with one message changed ----
{
    my $adir = "$root/session_$sid/agents";
    system('cp', '-a', "$adir/agent_svc-agent", "$adir/agent_new") == 0 or die;
    my $id6 = id_of('hello 6');
    ok set_bytes("$adir/agent_new/messages/message_$id6.json", 'hello 6', 'HELLO 6'), 'a copy with one message changed';
    rename "$adir/agent_svc-agent", "$adir/agent_old" or die;
    rename "$adir/agent_new", "$adir/agent_svc-agent" or die;
    $bd = turn('hello 9');
    ok given_has($bd, 'HELLO 6') && !given_has($bd, 'hello 6'), 'the swapped directory is what the model is given'
        or diag explain given($bd);
    system('rm', '-rf', "$adir/agent_old");
}

# ---- and the session goes on: the window the model is given is the files' ----
$bd = turn('hello 10');
my @files = sort { $a <=> $b } map { /message_(\d+)\.json$/ ? $1 : () } glob "$mdir/message_*.json";
my @want;
for my $id (@files) {
    my $j = JSON::PP->new->decode(SvcTest::read_file("$mdir/message_$id.json"));
    my $c = $j->{message}{content}[0]{text};
    push @want, $c if defined $c;
}
my @got = @{ given($bd) };
pop @want; # the answer to 'hello 10', written after the model was asked
is_deeply \@got, [ @want[ @want - @got .. $#want ] ],
    'the model is given the newest files as they are on disk' or diag explain [\@got, \@want];
done_testing();
