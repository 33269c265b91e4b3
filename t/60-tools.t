#!/usr/bin/perl
# Extensions as tools (SPEC 9) through nginx and real workers: t/bin/ext-tool receives its
# JSON arguments on stdin with a clean environment, and its answer reaches the model, the
# stored toolUse/toolResult messages, the stream's tool events and the turn line's
# tool_trace. Timeout (the process group is killed), non-zero exit, huge output (truncated),
# a missing executable, a disabled extension, and a looping model past
# agent.max_tool_iterations (echo and the openai provider drive the same path). At the end
# no worker has a child process left and no tool process lives on.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use SvcCliTest qw(svc);

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $TOOL = SvcTest::repo() . '/t/bin/ext-tool';
my $T = JSON::PP::true;
my $J = $SvcTest::JSON;

sub ext_yaml {
    return <<"YAML";
extensions:
  - name: ext
    description: "Test tool: echoes its arguments"
    parameters: {"type": "object", "properties": {"mode": {"type": "string"}}}
    command: ["$TOOL", "first-arg"]
    timeout_s: 5
    env: ["FOO=bar", "SVC_TEST_VISIBLE"]
  - name: slowext
    description: "Sleeps"
    command: ["$TOOL"]
    timeout_s: 1
  - name: longext
    description: "Sleeps for long"
    command: ["$TOOL"]
    timeout_s: 300
  - name: silent
    command: ["$TOOL", "silent"]
  - name: closed
    command: ["$TOOL", "closed"]
  - name: missing
    command: ["/nonexistent/svc-tool"]
  - name: off
    command: ["$TOOL"]
    enabled: false
YAML
}

my $s = SvcTest->start(config => ext_yaml(), workers => 2,
                       env => { SVC_TEST_VISIBLE => 'seen', SVC_TEST_SECRET => 'hush' });

sub chat {
    my ($srv, $sid, $text) = @_;
    return $srv->req(POST => '/api/chat', body => {
        session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub tool_result_of {
    my ($msgs) = @_;
    for my $m (@$msgs) {
        for my $b (@{ $m->{content} }) { return $b->{toolResult} if $b->{toolResult} }
    }
    return undef;
}
sub last_turn { my @t = $_[0]->turn_lines($_[1]); $t[-1] }

# ---- registered tools: GET /api/extensions, and what the model is offered ----
my $r = $s->req(GET => '/api/extensions');
is $r->{status}, 200, 'extensions 200';
my %x = map { $_->{name} => $_ } @{ $r->{json}{extensions} };
ok $x{ext} && $x{clock}, 'built-in clock and configured ext listed';
is $x{off}{enabled}, JSON::PP::false, 'disabled extension listed as disabled';
unlike $r->{body}, qr/ext-tool|first-arg|FOO|SVC_TEST_VISIBLE/, 'no command or environment shown';

# ---- a call through the echo model ----
$r = chat($s, 'tx-echo', '/tool ext {"mode":"echo","city":"Oslo"}');
is $r->{status}, 200, 'tool turn answers 200' or diag $r->{body};
my $answer = $r->{json}{choices}[0]{message}{content} // '';
like $answer, qr/^Tool ext returned: \{/, 'the tool answer reaches the model';
my ($out) = $answer =~ /returned: (\{.*\})$/s;
my $got = eval { $J->decode($out) } // {};
is_deeply $got->{args}, { mode => 'echo', city => 'Oslo' }, 'the script received its JSON arguments';
is $got->{stdin}, qq({"mode":"echo","city":"Oslo"}\n), 'as one line of JSON on stdin';
is_deeply $got->{argv}, ['first-arg'], 'argv from the command, no shell';
is_deeply $got->{env}, { FOO => 'bar', SVC_TEST_VISIBLE => 'seen' },
    'clean environment: only what the entry names';
my $msgs = $s->stored('tx-echo');
is scalar @$msgs, 4, 'user, assistant toolUse, user toolResult, assistant answer stored';
my ($tu) = map { $_->{toolUse} // () } @{ $msgs->[1]{content} };
is $tu->{name}, 'ext', 'native toolUse stored';
is_deeply $tu->{input}, { mode => 'echo', city => 'Oslo' }, 'toolUse input';
my $tr = tool_result_of($msgs);
is $tr->{toolUseId}, $tu->{toolUseId}, 'toolResult answers the toolUse';
is $tr->{status}, 'success', 'toolResult success';
is $tr->{content}[0]{text}, $out, 'toolResult holds the script output';
my $turn = last_turn($s, 'tx-echo');
is $turn->{status}, 'done', 'turn done';
is scalar @{ $turn->{tool_trace} }, 1, 'one tool_trace entry';
my $tt = $turn->{tool_trace}[0];
is_deeply [sort keys %$tt], [sort qw(call_id tool arguments ok latency_ms truncated error)],
    'tool_trace fields';
is $tt->{call_id}, $tu->{toolUseId}, 'trace call_id';
is $tt->{tool}, 'ext', 'trace tool';
is_deeply $tt->{arguments}, { mode => 'echo', city => 'Oslo' }, 'trace arguments';
ok $tt->{ok} && !$tt->{truncated} && !defined $tt->{error}, 'trace ok, not truncated, no error';
ok $tt->{latency_ms} >= 0, 'trace latency';

# streamed as tool events (svc.v2)
my $sse = $s->sse('/api/chat', body => { stream => $T, session_id => 'tx-stream',
    messages => [{ role => 'user', content => '/tool ext {"mode":"echo"}' }],
    metadata => { event_format => 'svc.v2' } });
my @svc = map { $_->{svc_event} } grep { ref && $_->{svc_event} } @{ $sse->{events} };
my ($ts) = grep { $_->{type} eq 'tool_start' } @svc;
my ($te) = grep { $_->{type} eq 'tool_result' } @svc;
is $ts && $ts->{tool}, 'ext', 'tool_start event streamed';
ok $te && $te->{ok}, 'tool_result event streamed, ok';
like $te && $te->{content}, qr/"mode":"echo"/, 'tool_result event carries the output';

# ---- failures: each a toolResult with status error; the run goes on ----
sub failing {
    my ($sid, $text, $re, $name) = @_;
    my $r = chat($s, $sid, $text);
    is $r->{status}, 200, "$name: the run still answers 200";
    my $tr = tool_result_of($s->stored($sid));
    is $tr && $tr->{status}, 'error', "$name: toolResult status error";
    like $tr && $tr->{content}[0]{text}, $re, "$name: clear message";
    my $turn = last_turn($s, $sid);
    is $turn->{status}, 'done', "$name: turn done";
    my $tt = $turn->{tool_trace}[0];
    ok !$tt->{ok}, "$name: trace not ok";
    like $tt->{error} // '', $re, "$name: trace error";
    like $r->{json}{choices}[0]{message}{content} // '', qr/^Tool \S+ failed: /,
        "$name: the model saw the failure";
    return $r;
}

my $pidfile = $s->home . '/sleep.pids';
failing('tx-timeout', qq(/tool slowext {"mode":"sleep","pidfile":"$pidfile"}),
        qr/^slowext timed out after 1 s and was stopped$/, 'timeout');
my ($p1, $p2) = split ' ', (SvcTest::read_file($pidfile) // '');
ok $p1 && $p2, 'the sleeping tool and its grandchild had started';
sub alive {
    my ($pid) = @_;
    my $st = SvcTest::read_file("/proc/$pid/stat") // return 0;
    my ($state) = $st =~ /\)\s+(\S)/;
    return $state ne 'Z';
}
ok SvcTest::wait_for(10, sub { !alive($p1) && !alive($p2) }),
    'timeout: the tool and its grandchild (same process group) were killed';

failing('tx-fail', '/tool ext {"mode":"fail"}',
        qr/^ext exited with status 3: something broke: bad city$/, 'non-zero exit');
failing('tx-missing', '/tool missing {}',
        qr{^missing: cannot run /nonexistent/svc-tool: No such file or directory$}, 'missing executable');
failing('tx-off', '/tool off {}', qr/^unknown tool: off$/, 'disabled extension');

# cancelling a run stops its running tool (long before the tool's own 300 s timeout)
my $pf2 = $s->home . '/long.pids';
my $run = $s->req(POST => '/api/chat/runs', body => { session_id => 'tx-cancel',
    messages => [{ role => 'user', content => qq(/tool longext {"mode":"sleep","pidfile":"$pf2"}) }] });
is $run->{status}, 202, 'cancel: async run with a long tool started';
ok SvcTest::wait_for(15, sub { -s $pf2 }), 'cancel: the tool is running';
my ($q1, $q2) = split ' ', (SvcTest::read_file($pf2) // '');
is $s->req(POST => "/api/chat/runs/$run->{json}{run_id}/cancel")->{status}, 200, 'cancel accepted'
    or diag explain $s->req(GET => "/api/chat/runs/$run->{json}{run_id}");
is $s->wait_run($run->{json}{run_id}, 30)->{json}{status}, 'cancelled', 'cancel: the run ends cancelled';
ok SvcTest::wait_for(10, sub { !alive($q1) && !alive($q2) }), 'cancel: the tool and its grandchild are gone';
$tr = tool_result_of($s->stored('tx-cancel'));
is $tr && $tr->{status}, 'error', 'cancel: toolResult status error';
is $tr && $tr->{content}[0]{text}, 'longext was stopped: the run was cancelled', 'cancel: says why';

# huge output: truncated, still a success
$r = chat($s, 'tx-huge', '/tool ext {"mode":"huge","bytes":2000000}');
is $r->{status}, 200, 'huge: 200';
$tr = tool_result_of($s->stored('tx-huge'));
is $tr->{status}, 'success', 'huge: toolResult success';
my $len = length $tr->{content}[0]{text};
ok $len > 60_000 && $len <= 65_536, "huge: output cut to the cap ($len bytes)";
$turn = last_turn($s, 'tx-huge');
is $turn->{tool_trace}[0]{truncated}, $T, 'huge: tool_trace truncated true';

# a tool that exits without reading its stdin
$r = chat($s, 'tx-silent', '/tool silent {"a":1}');
$tr = tool_result_of($s->stored('tx-silent'));
is $tr && $tr->{status}, 'success', 'a tool that ignores stdin succeeds';

# the svc tool (SIGPIPE not ignored): a tool that closes its stdin unread while 100 KB of
# arguments are still being written is EPIPE for svc, not a signal that kills it
my $pad = "p" x 100_000;
my $c = svc({ home => $s->home }, { SVC_HOME => $s->home }, 'chat', 'cx-closed',
            qq(/tool closed {"pad":"$pad"}));
is $c->{sig}, 0, 'svc chat: not killed by SIGPIPE';
is $c->{rc}, 0, 'svc chat: exit 0' or diag $c->{err};
is $c->{out}, "Tool closed returned: closed early\n", 'svc chat: the tool answer after it closed stdin';

# ---- the openai provider drives the same path; a looping model is stopped ----
my $fake = FakeOpenAI->start;
my $o = SvcTest->start(config => ext_yaml() . "model:\n  provider: openai\n  name: fake-1\n"
    . "  base_url: " . $fake->base_url . "\n  api_key: sk-x\n  timeout_s: 10\n"
    . "agent:\n  max_tool_iterations: 2\n", workers => 2, env => { SVC_TEST_VISIBLE => 'seen' });
$r = chat($o, 'ox-1', 'call tool ext {"mode":"echo","n":7}');
is $r->{status}, 200, 'openai: tool turn 200' or diag $r->{body};
like $r->{json}{choices}[0]{message}{content}, qr/^Tool ext said: \{"args":\{"mode":"echo","n":7\}/,
    'openai: the script output reached the model as a tool message';
my @reqs = @{ $fake->requests };
my ($tools) = map { $_->{body}{tools} } $reqs[0];
my ($fx) = grep { $_->{function}{name} eq 'ext' } @{ $tools // [] };
is $fx->{function}{description}, 'Test tool: echoes its arguments', 'openai: ext offered as a tool';
is_deeply $fx->{function}{parameters}, { type => 'object', properties => { mode => { type => 'string' } } },
    'openai: with its JSON Schema';
ok !(grep { $_->{function}{name} eq 'off' } @{ $tools // [] }), 'openai: disabled extension not offered';
is last_turn($o, 'ox-1')->{tool_trace}[0]{tool}, 'ext', 'openai: tool_trace';

$r = chat($o, 'ox-loop', 'loop tool ext {"mode":"echo"}');
is $r->{status}, 500, 'looping model: 500';
is $r->{json}{error}{code}, 'tool_loop_limit', 'looping model: tool_loop_limit';
like $r->{json}{error}{message}, qr/past 2 iterations/, 'looping model: clear message';
$turn = last_turn($o, 'ox-loop');
is $turn->{status}, 'error', 'looping model: turn error';
is $turn->{error}{code}, 'tool_loop_limit', 'looping model: turn error code';
is scalar @{ $turn->{tool_trace} }, 3, 'looping model: tools ran max_tool_iterations + 1 times, no more';
my $sc = $J->decode(SvcTest::read_file($o->root . '/session_ox-loop/svc_session.json'));
is $sc->{status}, 'error', 'looping model: session status error';
is $sc->{last_error}{code}, 'tool_loop_limit', 'looping model: last_error';
$r = chat($o, 'ox-loop', 'hello again');
is $r->{status}, 200, 'the session is usable after the loop error';

# ---- no process left behind ----
sub children_of_workers {
    my ($srv) = @_;
    my (%ppid, %name);
    for my $d (glob '/proc/[0-9]*') {
        my $st = SvcTest::read_file("$d/stat") // next;
        my ($pid, $comm, $state, $pp) = $st =~ /^(\d+) \((.*)\) (\S) (\d+)/ or next;
        $ppid{$pid} = $pp;
        $name{$pid} = $comm;
    }
    my $master = $srv->master_pid;
    my @workers = grep { $ppid{$_} == $master } keys %ppid;
    my %w = map { $_ => 1 } @workers;
    return (scalar @workers, [ map { "$_ ($name{$_})" } grep { $w{ $ppid{$_} } } keys %ppid ]);
}
for my $srv ($s, $o) {
    my ($nw, $kids) = children_of_workers($srv);
    ok $nw > 0, 'found the workers';
    is_deeply $kids, [], 'no worker has a child process (no zombie, no tool left)';
}
my @tools_alive = grep {
    my $c = SvcTest::read_file("$_/cmdline") // '';
    $c =~ /ext-tool/ && alive((split m{/}, $_)[-1])
} glob '/proc/[0-9]*';
is_deeply \@tools_alive, [], 'no tool process is still running';

$o->stop;
$fake->stop;
$s->stop;
done_testing;
