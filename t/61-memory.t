#!/usr/bin/perl
# Memory sync and recall (SPEC 8) through nginx and real workers: the digest line (limits,
# folded, never the full text), svc_memory.json and memory_state, multi_agents/ for a new
# session, no duplicate after an idempotent replay (sync and async) or a repeated sync,
# nothing for a cancelled run, an unwritable memory root leaving the run done with the
# error in memory_state, 4 workers x 8 sessions appending to one file with every line
# whole, and recall reaching the model (the fake OpenAI server's recorded request).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use POSIX ();
use SvcTest;
use SvcCliTest qw(svc);
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
my $J = $SvcTest::JSON;

sub chat {
    my ($srv, $sid, $text, %h) = @_;
    return $srv->req(POST => '/api/chat', headers => \%h, body => {
        session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub mem_lines {
    my ($file) = @_;
    my $t = SvcTest::read_file($file) // '';
    return map { my $l = $_; eval { $J->decode($l) } // { torn => $l } } grep { length } split /\n/, $t;
}
sub json_of { my $t = SvcTest::read_file($_[0]); defined $t ? $J->decode($t) : undef }

my $s = SvcTest->start(config => "server:\n  workers: 4\n", workers => 4);
my $MEM = $s->home . '/memory/svc-agent/memory.jsonl';

# ---- one turn: the digest ----
my $long = "Please   remember\n\nthis:\t" . join(' ', map { "word$_" } 1 .. 200);
my $r = chat($s, 'mem-1', $long);
is $r->{status}, 200, 'turn 200';
my @l = mem_lines($MEM);
is scalar @l, 1, 'one digest line';
my $d = $l[0];
is_deeply [sort keys %$d], [sort qw(session_id message_id at user assistant)], 'digest keys';
is $d->{session_id}, 'mem-1', 'session_id';
is $d->{message_id}, 1, 'message_id: the assistant message';
like $d->{at}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/, 'at';
ok length($d->{user}) <= 280 && length($d->{assistant}) <= 280, 'each side at most 280 characters';
like $d->{user}, qr/^Please remember this: word1 word2 /, 'whitespace folded';
isnt $d->{user}, $long, 'never the verbatim text';
like $d->{user}, qr/\x{2026}$/, 'a cut side ends with an ellipsis';
my $sdir = $s->root . '/session_mem-1';
ok -d "$sdir/multi_agents", 'new session has multi_agents/';
my $mj = json_of("$sdir/svc_memory.json");
is $mj->{schema_version}, 1, 'svc_memory.json schema_version';
is $mj->{session_id}, 'mem-1', 'svc_memory.json session_id';
is $mj->{last_synced_message_id}, 1, 'svc_memory.json last_synced_message_id';
is $mj->{memory_file}, $MEM, 'svc_memory.json memory_file';
is $mj->{digests}, 1, 'svc_memory.json digests';
$r = $s->req(GET => '/api/v1/chat/sessions/mem-1');
my $ms = $r->{json}{session}{memory_state} // $r->{json}{memory_state};
is $ms->{enabled}, JSON::PP::true, 'memory_state.enabled';
is $ms->{last_synced_message_id}, 1, 'memory_state mirrors last_synced_message_id';
is $ms->{digests}, 1, 'memory_state digests';
is $ms->{error}, undef, 'memory_state without error';

# a second turn: a second line, the count goes up
chat($s, 'mem-1', 'second');
@l = grep { $_->{session_id} eq 'mem-1' } mem_lines($MEM);
is scalar @l, 2, 'second turn: second line';
is $l[1]{message_id}, 3, 'second digest: message 3';
is json_of("$sdir/svc_memory.json")->{digests}, 2, 'digests 2';

# ---- replays and retries add nothing ----
$r = chat($s, 'mem-idem', 'once only', 'idempotency-key' => 'k1');
is $r->{status}, 200, 'idempotent turn';
$r = chat($s, 'mem-idem', 'once only', 'idempotency-key' => 'k1');
is $r->{headers}{'idempotent-replayed'}, 'true', 'replayed';
is scalar(grep { $_->{session_id} eq 'mem-idem' } mem_lines($MEM)), 1, 'idempotent replay: one digest';
for (1 .. 2) {
    $r = $s->req(POST => '/api/chat/runs', headers => { 'idempotency-key' => 'k2' }, body => {
        session_id => 'mem-async', messages => [{ role => 'user', content => 'async once' }] });
    $s->wait_run($r->{json}{run_id});
}
# the runner records the run as done first, then syncs memory: wait for its line
ok SvcTest::wait_for(10, sub { grep { $_->{session_id} eq 'mem-async' } mem_lines($MEM) }),
    'async run: its digest arrives after the run is done';
ok SvcTest::wait_for(10, sub { -e $s->root . '/session_mem-async/svc_memory.json' }),
    'async run: svc_memory.json written';
is scalar(grep { $_->{session_id} eq 'mem-async' } mem_lines($MEM)), 1, 'async retry with the same key: one digest';
my $cli_env = { SVC_HOME => $s->home };
my $c = svc({ home => $s->home }, $cli_env, 'memory', 'sync', 'mem-async');
is $c->{rc}, 0, 'svc memory sync: exit 0' or diag $c->{err};
is $J->decode($c->{out})->{digests}, 1, 'svc memory sync prints svc_memory.json';
is scalar(grep { $_->{session_id} eq 'mem-async' } mem_lines($MEM)), 1, 'a repeated sync appends nothing';
$c = svc({ home => $s->home }, $cli_env, 'memory', 'sync', '../x');
is $c->{rc}, 1, 'svc memory sync: bad id exits 1';
like $c->{err}, qr/invalid_session_id/, 'bad id named';
$c = svc({ home => $s->home }, $cli_env, 'memory', 'sync', 'nope');
like $c->{err}, qr/session_not_found/, 'unknown session named';
my $off = SvcTest->make_home("sessions:\n  fsync: false\n  sync_memory: false\n");
$c = svc({ home => $off }, { SVC_HOME => $off }, 'chat', 'off-1', 'hello');
is $c->{rc}, 0, 'sync_memory off: the run works';
ok !-e "$off/agents/native_sessions/session_off-1/svc_memory.json", 'sync_memory off: no svc_memory.json';
ok !-e "$off/memory", 'sync_memory off: no memory file';
$c = svc({ home => $off }, { SVC_HOME => $off }, 'memory', 'sync', 'off-1');
like $c->{err}, qr/config_error: memory sync needs/, 'sync_memory off: svc memory sync refuses';
my $nf = SvcTest->make_home("sessions:\n  fsync: false\n  provider: native_file\n");
$c = svc({ home => $nf }, { SVC_HOME => $nf }, 'chat', 'nf-1', 'hello');
is $c->{rc}, 0, 'native_file: the run works';
ok !-e "$nf/agents/native_sessions/session_nf-1/svc_memory.json", 'native_file: no svc_memory.json';
ok -d "$nf/agents/native_sessions/session_nf-1/multi_agents", 'native_file: multi_agents/ too';

# a cancelled run is not synced
$r = $s->req(POST => '/api/chat/runs', body => {
    session_id => 'mem-cancel', messages => [{ role => 'user', content => '/slow 300 a b c d e f g h' }] });
my $rid = $r->{json}{run_id};
SvcTest::wait_for(10, sub { -e $s->root . '/session_mem-cancel/svc_session.json' });
$s->req(POST => "/api/chat/runs/$rid/cancel");
is $s->wait_run($rid)->{json}{status}, 'cancelled', 'run cancelled';
is scalar(grep { $_->{session_id} eq 'mem-cancel' } mem_lines($MEM)), 0, 'cancelled run: no digest';

# ---- 4 workers, 8 sessions, one memory file ----
my @kids;
for my $k (1 .. 8) {
    my $pid = fork // die;
    if (!$pid) {
        my $ok = 1;
        for my $t (1 .. 3) {
            my $x = chat($s, "par-$k", "parallel $k turn $t " . ('x' x 500));
            $ok = 0 unless $x->{status} == 200;
        }
        POSIX::_exit($ok ? 0 : 1);
    }
    push @kids, $pid;
}
my $fails = 0;
for (@kids) { waitpid($_, 0); $fails++ if $? }
is $fails, 0, '8 clients x 3 turns all answered 200';
my @par = grep { ($_->{session_id} // '') =~ /^par-/ } mem_lines($MEM);
my @torn = grep { $_->{torn} } mem_lines($MEM);
is scalar @torn, 0, 'every line of the memory file parses';
is scalar @par, 24, 'one digest per turn (24)';
my %seen = map { ("$_->{session_id}/$_->{message_id}" => 1) } @par;
is scalar keys %seen, 24, 'no duplicate (session, message) pair';
is json_of($s->root . "/session_par-$_/svc_memory.json")->{digests}, 3, "par-$_: digests 3" for 1 .. 8;

# ---- a torn last line (a writer cut mid-line): the next digest starts a line of its own ----
{
    open my $fh, '>>', $MEM or die "$MEM: $!";
    print $fh '{"session_id":"cut","mess';
    close $fh;
    my $x = chat($s, 'mem-torn', 'after a torn line');
    is $x->{status}, 200, 'a turn after a torn line in the memory file';
    my @lines = split /\n/, SvcTest::read_file($MEM);
    is $lines[-2], '{"session_id":"cut","mess', 'the torn line stays as it was, on its own line';
    my $last = eval { $J->decode($lines[-1]) } // {};
    is $last->{session_id}, 'mem-torn', 'the new digest is a whole line after it';
}

# ---- a run's own pair is appended without reading back through the file: a turn's cost
# does not grow with what other sessions appended since this session's last digest ----
{
    is chat($s, 'mem-far', 'first')->{status}, 200, 'mem-far: a first turn';
    open my $fh, '>>', $MEM or die "$MEM: $!";
    print $fh $J->encode({ session_id => 'filler-' . ($_ % 50), message_id => $_,
        at => '2026-11-23T00:00:00Z', user => "u $_ " . ("x" x 40), assistant => "a $_" }), "\n"
        for 1 .. 9000;
    close $fh;
    ok -s $MEM > 1024 * 1024, 'over 1 MiB of other sessions\' digests after its line';
  SKIP: {
        skip 'strace not installed', 2 unless system('strace -V >/dev/null 2>&1') == 0;
        my @w = $s->worker_pids;
        my $log = $s->home . '/mem-far.strace';
        my $spid = SvcTest::strace_start($w[0], $log, '-s', '0', '-e', 'trace=pread64',
                                         map { ('-p', $_) } @w[1 .. $#w]);
        sleep 1;    # every worker attached
        my $x = chat($s, 'mem-far', 'second');
        my $tr = SvcTest::strace_stop($spid, $log);
        is $x->{status}, 200, 'mem-far: a turn with its last digest 1 MiB back';
        my ($max) = sort { $b <=> $a } ($tr =~ /pread64\(\d+, ""(?:\.\.\.)?, (\d+), /g), 0;
        ok $max < 4096, "its sync read no tail of the memory file (largest pread $max bytes)"
            or diag $tr;
    }
    my @far = grep { ($_->{session_id} // '') eq 'mem-far' } mem_lines($MEM);
    is scalar @far, 2, 'mem-far: two turns, two digests';
}

# ---- svc memory sync refuses while a run is in progress (the run syncs its pair itself,
# and nobody else writes it meanwhile) ----
{
    my $pid = fork // die;
    if (!$pid) { chat($s, 'mem-live', '/slow 300 a b c d e f'); POSIX::_exit(0) }
    my $sc = $s->root . '/session_mem-live/svc_session.json';
    ok SvcTest::wait_for(10, sub { (SvcTest::read_file($sc) // '') =~ /"status": "running"/ }),
        'mem-live: a run in progress';
    my $c = svc({ home => $s->home }, { SVC_HOME => $s->home }, 'memory', 'sync', 'mem-live');
    isnt $c->{rc}, 0, 'svc memory sync during the run: refused';
    like $c->{err}, qr/session_busy: .*run in progress/, 'as session_busy, saying why';
    waitpid $pid, 0;
    $c = svc({ home => $s->home }, { SVC_HOME => $s->home }, 'memory', 'sync', 'mem-live');
    is $c->{rc}, 0, 'after the run: exit 0' or diag $c->{err};
    is scalar(grep { ($_->{session_id} // '') eq 'mem-live' } mem_lines($MEM)), 1,
        'one digest: the run\'s own, the later sync found it synced';
}
$s->stop;

# ---- an unwritable memory root: the run is done, the error recorded ----
my $bh = SvcTest->make_home('');
SvcTest::write_file("$bh/blocker", "a file where a directory should be\n");
SvcTest::write_file("$bh/agents.yaml", "sessions:\n  fsync: false\nmemory:\n  root: $bh/blocker/mem\n");
my $b = SvcTest->start(home => $bh);
$r = chat($b, 'mem-bad', 'hello');
is $r->{status}, 200, 'unwritable root: run answers 200';
my $sc = json_of($b->root . '/session_mem-bad/svc_session.json');
is $sc->{status}, 'idle', 'unwritable root: session idle';
is $sc->{last_error}, undef, 'unwritable root: no last_error';
my @t = $b->turn_lines('mem-bad');
is $t[-1]{status}, 'done', 'unwritable root: turn done';
is $sc->{memory_state}{error}{code}, 'io_error', 'memory_state.error.code io_error';
like $sc->{memory_state}{error}{message}, qr{blocker/mem/svc-agent/memory\.jsonl: mkdir: Not a directory},
    'memory_state.error.message says what failed';
ok !-e $b->root . '/session_mem-bad/svc_memory.json', 'no svc_memory.json claims a sync';
ok SvcTest::wait_for(5, sub { $b->log =~ /mem-bad: memory sync failed/ }), 'the failure is logged';
$b->stop;

# ---- recall reaches the model ----
my $fake = FakeOpenAI->start;
my $o = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: sk-x\nmemory:\n  recall: 2\n", workers => 2);
chat($o, 'rc-0', 'zebras have stripes');
chat($o, 'rc-1', 'my favourite colour is teal');
chat($o, 'rc-2', 'the   capital of Norway is Oslo');
sub request_for { $fake->request_for($_[0]) }
$r = chat($o, 'rc-3', 'what do you remember?');
is $r->{status}, 200, 'recall turn 200';
my $req = request_for('what do you remember?');
my $sys = $req->{messages}[0];
is $sys->{role}, 'system', 'system message first' or diag explain $fake->requests;
like $sys->{content}, qr/^You are a helpful assistant\.\n\nNotes from earlier conversations/,
    'recall follows the system prompt';
like $sys->{content}, qr/User: the capital of Norway is Oslo \| Assistant: You said: the capital/,
    'newest digest recalled (folded)';
like $sys->{content}, qr/User: my favourite colour is teal/, 'second digest recalled';
ok index($sys->{content}, 'Norway') < index($sys->{content}, 'teal'), 'newest first';
unlike $sys->{content}, qr/zebras/, 'no more than N (2) digests';
is scalar(() = $sys->{content} =~ /^- \[/mg), 2, 'exactly N entries';
chat($o, 'rc-1', 'again');
$sys = request_for('again')->{messages}[0]{content};
unlike $sys, qr/teal/, "a session's own digests are not recalled to it";
like $sys, qr/what do you remember\?/, 'recall: the N newest of other sessions';
like $sys, qr/Norway/, 'recall: ... both of them';
$o->stop;
$fake->stop;
done_testing;
