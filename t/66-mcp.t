#!/usr/bin/perl
# MCP servers as tools (SPEC 16) through nginx and real workers, with real servers from npm
# (pinned in t/mcp/package.json and its lock file, installed into t/mcp/node_modules when
# missing, started with node and their entry script): server-filesystem and
# server-everything over stdio, server-everything over Streamable HTTP (bound to
# 127.0.0.1), and t/mcp/bad-server.mjs, which misbehaves (slow, crashing, not JSON, errors).
# Listed in GET /api/extensions (a server that cannot start is reported there), called by
# the echo model (/tool files__read_file {...}) and by the openai provider against
# FakeOpenAI scripted to use the tool from a plain prompt; stored as Strands toolUse /
# toolResult blocks (text, image, json, error), streamed as tool events, counted in the turn
# line. Failures reach the model and the run goes on; a crashed server is started again.
# Per-user servers stay invisible to other users; secrets stay out of /api/config, the log
# and the servers' environment. A SIGKILLed worker leaves no server behind, nor does the pool.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;
use FakeOpenAI;
use FakeMCP;
use RealMCP;
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time sleep);

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $J = $SvcTest::JSON;
my $repo = SvcTest->repo;
my $dir = $RealMCP::DIR;
my $node = RealMCP::node();
my $EV = $RealMCP::EV;
my $FS = $RealMCP::FS;
my $BAD = "$dir/bad-server.mjs";

# ---- the Streamable HTTP server: server-everything on a loopback port ----
my ($http_pid, $port) = RealMCP::everything_http($node);
my $wild = IO::Socket::INET->new(PeerAddr => "127.0.0.2:$port");
ok(!$wild, 'and on loopback 127.0.0.1 only');

my $fmcp = FakeMCP->start; # plain JSON answers, pages, headers, a session that expires
my $home = SvcTest->make_home('');
my $share = "$home/share";
mkdir $share;
SvcTest::write_file("$share/a.txt", "hello from the share\n");
my $starts = "$home/bad.starts";
my $yaml = <<"YAML";
server:
  users:
    - {id: alice, token_env: ALICE_TOKEN}
    - {id: bob, token_env: BOB_TOKEN}
    - {id: root, token_env: ROOT_TOKEN, role: admin}
mcp_servers:
  - name: files
    command: ["$node", "$FS", "$share"]
  - name: everything
    command: ["$node", "$EV", stdio, "$home/mcp-marker"]
    env: {MCP_SECRET_VALUE: s3cret-env-value}
    env_pass: [MCP_PASSED, OPENAI_API_KEY, ROOT_TOKEN]
  - name: web
    url: http://127.0.0.1:$port/mcp
    headers_env: {X-Test-Token: MCP_HEADER_TOKEN}
    allowed_tools: [echo, get-sum]
  - name: json
    url: ${\ $fmcp->url}
    headers_env: {X-Test-Token: MCP_HEADER_TOKEN}
  - name: bad
    command: ["$node", "$BAD", normal, "$starts"]
    timeout_s: 2
  - name: alices
    command: ["$node", "$BAD", normal, "$home/alices.starts"]
    users: [alice]
  - name: broken
    command: [/nonexistent/mcp-server]
YAML
SvcTest::write_file("$home/agents.yaml", SvcTest::with_defaults($yaml));
my %env = (ALICE_TOKEN => 'tok-alice', BOB_TOKEN => 'tok-bob', ROOT_TOKEN => 'tok-root',
           MCP_HEADER_TOKEN => 'h3ader-token-value', MCP_PASSED => 'passed-on',
           OPENAI_API_KEY => 'sk-never-for-mcp');
my $s = SvcTest->start(home => $home, workers => 1, env => \%env);
my %as = map { $_ => { Authorization => "Bearer tok-$_" } } qw(alice bob root);

sub chat {
    my ($who, $sid, $text) = @_;
    return $s->req(POST => '/api/chat', headers => $as{$who}, body => {
        session_id => $sid, messages => [{ role => 'user', content => $text }] });
}
sub blocks_of {
    my ($msgs, $kind) = @_;
    return map { $_->{$kind} // () } map { @{ $_->{content} } } @$msgs;
}
sub answer { $_[0]{json}{choices}[0]{message}{content} // '' }

# ---- listed ----
my $r = $s->req(GET => '/api/extensions', headers => $as{root});
is $r->{status}, 200, 'extensions 200';
my %m = map { $_->{name} => $_ } @{ $r->{json}{mcp_servers} // [] };
is_deeply [sort keys %m], [qw(alices bad broken everything files json web)], 'an admin sees every server';
is_deeply [map { $_->{name} } @{ $m{json}{tools} }], [qw(one two)], 'tools/list followed nextCursor';
is $m{files}{transport}, 'stdio', 'files: stdio';
is $m{web}{transport}, 'streamable_http', 'web: streamable_http';
is $m{$_}{state}, 'ready', "$_: ready" for qw(files everything web bad);
ok((grep { $_->{name} eq 'read_file' } @{ $m{files}{tools} }), 'files lists read_file');
is_deeply [sort map { $_->{name} } @{ $m{web}{tools} }], [qw(echo get-sum)],
    'allowed_tools keeps the tools named';
is $m{broken}{state}, 'failed', 'a server that cannot start: failed';
like $m{broken}{last_error}, qr{cannot run /nonexistent/mcp-server}, 'with the reason';
unlike $r->{body}, qr/s3cret|h3ader|MCP_HEADER_TOKEN|MCP_SECRET_VALUE/, 'no env or header shown';
like $s->log, qr{mcp: broken: cannot run /nonexistent/mcp-server}, 'and the log says so';
is $m{broken}{tools} && scalar @{ $m{broken}{tools} }, 0, 'its tools are absent';

my %seen = map { $_->{name} => 1 }
           @{ $s->req(GET => '/api/extensions', headers => $as{bob})->{json}{mcp_servers} };
ok !$seen{alices} && $seen{files}, "bob does not see alice's server";
%seen = map { $_->{name} => 1 }
        @{ $s->req(GET => '/api/extensions', headers => $as{alice})->{json}{mcp_servers} };
ok $seen{alices}, 'alice sees hers';

# ---- Streamable HTTP in detail, against FakeMCP: JSON answers, headers, sessions ----
$r = chat('root', 'm-json1', '/tool json__one {"a":1}');
is answer($r), 'Tool json__one returned: one: {"a":1}', 'a JSON (not SSE) answer';
my @fr = @{ $fmcp->requests };
my ($init) = grep { ($_->{body}{method} // '') eq 'initialize' } @fr;
my ($call) = grep { ($_->{body}{method} // '') eq 'tools/call' } @fr;
is $init->{body}{params}{protocolVersion}, '2025-06-18', 'initialize offers 2025-06-18';
ok !exists $init->{headers}{'mcp-protocol-version'}, 'initialize carries no MCP-Protocol-Version';
is $call->{headers}{'mcp-protocol-version'}, '2025-06-18', 'later requests carry the negotiated revision';
is $call->{headers}{'mcp-session-id'}, 'sess-1', 'and the Mcp-Session-Id the server gave';
like $call->{headers}{accept}, qr{application/json.*text/event-stream}, 'Accept: both answers';
is $call->{headers}{'x-test-token'}, 'h3ader-token-value', 'headers_env: the header from its variable';
ok((grep { !defined $_->{body}{id} && ($_->{body}{method} // '') eq 'notifications/initialized' } @fr),
   'notifications/initialized sent');
$fmcp->expire;
$r = chat('root', 'm-json2', '/tool json__one {"b":2}');
is answer($r), 'Tool json__one returned: one: {"b":2}', 'a session the server ended: initialized again';
is $fmcp->requests->[-1]{headers}{'mcp-session-id'}, 'sess-2', 'with the new session';
$r = chat('root', 'm-json3', '/tool json__two {}');
like answer($r), qr/^Tool json__two failed: two always fails/, 'isError over HTTP';

$r = $s->req(GET => '/api/config', headers => $as{root});
is $r->{json}{mcp_servers}[1]{env}{MCP_SECRET_VALUE}, '***', '/api/config: env values are ***';
is $r->{json}{mcp_servers}[2]{headers_env}{'X-Test-Token'}, '***', '/api/config: header values are ***';
unlike $r->{body}, qr/s3cret|MCP_HEADER_TOKEN/, '/api/config: no secret';

# ---- the echo model calls a filesystem tool ----
$r = chat('root', 'm-read', qq(/tool files__read_file {"path":"$share/a.txt"}));
is $r->{status}, 200, 'echo: a turn with an MCP call answers 200' or diag $r->{body};
is answer($r), "Tool files__read_file returned: hello from the share\n", 'echo: the file reached the model';
my $msgs = $s->stored('m-read');
my ($tu) = blocks_of($msgs, 'toolUse');
my ($tr) = blocks_of($msgs, 'toolResult');
is $tu->{name}, 'files__read_file', 'stored: toolUse names <server>__<tool>';
is_deeply $tu->{input}, { path => "$share/a.txt" }, 'stored: toolUse input';
is $tr->{toolUseId}, $tu->{toolUseId}, 'stored: the toolResult answers it';
is $tr->{status}, 'success', 'stored: success';
is $tr->{content}[0]{text}, "hello from the share\n", 'stored: the text as a text block';
my @turns = $s->turn_lines('m-read');
is $turns[-1]{tool_trace}[0]{tool}, 'files__read_file', 'counted in svc_turns.jsonl';
ok $turns[-1]{tool_trace}[0]{ok}, 'trace ok';

my $sse = $s->sse('/api/chat', headers => $as{root}, body => { stream => JSON::PP::true,
    session_id => 'm-stream', metadata => { event_format => 'svc.v2' },
    messages => [{ role => 'user', content => '/tool web__echo {"message":"over http"}' }] });
my @svc = map { $_->{svc_event} } grep { ref && $_->{svc_event} } @{ $sse->{events} };
my ($ts) = grep { $_->{type} eq 'tool_start' } @svc;
my ($te) = grep { $_->{type} eq 'tool_result' } @svc;
is $ts && $ts->{tool}, 'web__echo', 'streamed: tool_start';
is $te && $te->{content}, 'Echo: over http', 'streamed: tool_result, over Streamable HTTP';

# images, structured content, an error result, the environment
chat('root', 'm-img', '/tool everything__get-tiny-image {}');
my ($img) = grep { $_->{image} } map { @{ $_->{content} } } blocks_of($s->stored('m-img'), 'toolResult');
is $img && $img->{image}{format}, 'png', 'an image result is a Strands image block';
ok $img && $img->{image}{source}{bytes}{__bytes_encoded__}
   && length($img->{image}{source}{bytes}{data}) > 100, 'with its bytes as Strands encodes them';

chat('root', 'm-json', '/tool everything__get-structured-content {"location":"New York"}');
($tr) = blocks_of($s->stored('m-json'), 'toolResult');
ok exists $tr->{structuredContent}{temperature}, "structuredContent kept as JSON, as Strands' MCP client keeps it";
like $tr->{content}[0]{text}, qr/temperature/, 'beside the content the model reads';

$r = chat('root', 'm-denied', '/tool files__read_file {"path":"/etc/passwd"}');
is $r->{status}, 200, 'isError: the run answers 200';
($tr) = blocks_of($s->stored('m-denied'), 'toolResult');
is $tr->{status}, 'error', 'isError: toolResult status error';
like answer($r), qr/^Tool files__read_file failed: .*denied/i, 'isError: the model saw it';

$r = chat('root', 'm-env', '/tool everything__get-env {}');
($tr) = blocks_of($s->stored('m-env'), 'toolResult');
my $envs = eval { $J->decode($tr->{content}[0]{text}) } // {};
is $envs->{MCP_SECRET_VALUE}, 's3cret-env-value', 'env: the entry reaches the server';
is $envs->{MCP_PASSED}, 'passed-on', 'env_pass: passed on';
is_deeply [grep { !/^(PATH|HOME|LANG|MCP_SECRET_VALUE|MCP_PASSED)$/ } sort keys %$envs], [],
    'env: nothing else (no OPENAI_API_KEY, no svc token)' or diag explain [sort keys %$envs];
like $s->log, qr/mcp everything: env_pass OPENAI_API_KEY is svc's own secret: not passed/,
     "env_pass never hands on svc's own secrets (the model's key, a user's token)";

# ---- misbehaving: every failure an error result the model sees, the run goes on ----
sub failing {
    my ($tool, $re) = @_;
    my $t0 = time;
    my $r = chat('root', "m-$tool", "/tool bad__$tool {}");
    is $r->{status}, 200, "$tool: the run answers 200";
    my ($tr) = blocks_of($s->stored("m-$tool"), 'toolResult');
    is $tr && $tr->{status}, 'error', "$tool: toolResult error";
    like $tr && $tr->{content}[0]{text}, $re, "$tool: says why";
    like answer($r), qr/^Tool bad__$tool failed: /, "$tool: the model saw the failure";
    return time - $t0;
}
sub bad_pid { answer(chat('root', 'm-pid', '/tool bad__pid {}')) =~ /returned: (\d+)/ ? $1 : 0 }
my $pid0 = bad_pid();
ok $pid0, "the bad server answers (pid $pid0)";
my $took = failing('slow', qr/^bad did not answer within 2 s$/);
ok $took < 8, sprintf('slow: cut at timeout_s (%.1f s)', $took);
my $pid1 = bad_pid();
ok $pid1 && $pid1 != $pid0, 'after a timeout the server was started again';
ok !kill(0, $pid0), 'and the one that timed out is gone';
failing('crash', qr/^bad: the server closed its output/);
like $s->log, qr/mcp bad: server $pid1 exited with status 9/, 'crash: logged';
my $pid2 = bad_pid();
ok $pid2 && $pid2 != $pid1, 'a crashed server is started again at the next use';
failing('garbage', qr/^bad wrote something that is not JSON-RPC: this is not json$/);
failing('error', qr/^bad answered error -32000: broken on purpose$/);
my $pid3 = bad_pid();
ok $pid3 && $pid3 == bad_pid(), 'a JSON-RPC error keeps the server; a warm server is reused';
is answer(chat('root', 'm-ask', '/tool bad__ask {}')), 'Tool bad__ask returned: {}; error -32601',
    "the server's ping is answered, its other requests refused (-32601)";
ok !(grep { $_->{name} eq 'extra' } @{ (grep { $_->{name} eq 'bad' } @{
    $s->req(GET => '/api/extensions', headers => $as{root})->{json}{mcp_servers} })[0]{tools} }),
   'no tool "extra" yet';
chat('root', 'm-grow', '/tool bad__grow {}');
ok((grep { $_->{name} eq 'extra' } @{ (grep { $_->{name} eq 'bad' } @{
    $s->req(GET => '/api/extensions', headers => $as{root})->{json}{mcp_servers} })[0]{tools} }),
   'notifications/tools/list_changed: the list is read again, with the new tool');

# ---- users ----
$r = chat('bob', 'm-bob', '/tool alices__ok {"x":1}');
($tr) = blocks_of($s->stored('m-bob'), 'toolResult');
is $tr->{status}, 'error', "bob cannot call alice's server";
is $tr->{content}[0]{text}, 'unknown tool: alices__ok', 'it is unknown to him';
$r = chat('alice', 'm-alice', '/tool alices__ok {"x":1}');
is answer($r), 'Tool alices__ok returned: {"x":1}', 'alice can';

# ---- the dashboard: the Status view and a transcript, in chromium (skipped without it) ----
SKIP: {
    my $bdir = "$repo/t/node/browser";
    skip 'chromium or playwright-core missing (t/60-dashboard.t installs it)', 1
        unless -x '/usr/bin/chromium' && -f "$bdir/node_modules/playwright-core/package.json";
    my $shots = SvcTest->build . '/dashboard';
    mkdir $shots;
    my $out = `'$node' '$bdir/mcp.mjs' --base '${\ $s->url}' --token tok-root --sid m-read --shots '$shots' 2>&1`;
    my $done;
    for (split /\n/, $out) {
        my $c = eval { $J->decode($_) } or do { diag $_; next };
        $done = 1, next if $c->{done};
        ok $c->{ok}, "dashboard: $c->{name}" or diag $c->{diag} // '';
    }
    ok $done, 'dashboard: the browser script ran to its end';
}

# ---- the openai provider: the model decides to use the tool from a plain prompt ----
my $fake = FakeOpenAI->start(rules => [{ prompt => qr/what does a\.txt say/i,
    tool => 'files__read_file', arguments => qq({"path":"$share/a.txt"}) }]);
my $ohome = SvcTest->make_home('');
SvcTest::write_file("$ohome/agents.yaml", SvcTest::with_defaults(<<"YAML"));
model:
  provider: openai
  name: fake-1
  base_url: ${\ $fake->base_url}
  api_key: sk-test-key
mcp_servers:
  - name: files
    command: ["$node", "$FS", "$share"]
YAML
my $o = SvcTest->start(home => $ohome, workers => 1);
$r = $o->req(POST => '/api/chat', body => { session_id => 'o-read',
    messages => [{ role => 'user', content => 'What does a.txt say?' }] });
is $r->{status}, 200, 'openai: 200' or diag $r->{body};
is answer($r), "Tool files__read_file said: hello from the share\n", 'openai: the result reached the model';
my @reqs = @{ $fake->requests };
my ($fn) = grep { $_->{function}{name} eq 'files__read_file' } @{ $reqs[0]{body}{tools} // [] };
ok $fn, 'openai: the MCP tool was offered as a function';
is $fn && $fn->{function}{parameters}{properties}{path}{type}, 'string', 'with its inputSchema';
my ($tm) = grep { ($_->{role} // '') eq 'tool' } @{ $reqs[1]{body}{messages} // [] };
is $tm && $tm->{content}, "hello from the share\n", 'openai: sent the tool message';
($tu) = blocks_of($o->stored('o-read'), 'toolUse');
is $tu->{name}, 'files__read_file', 'openai: stored as a toolUse';
unlike $o->log . $s->log, qr/s3cret-env-value|h3ader-token-value|sk-test-key|sk-never/,
    'no secret in the logs';

# ---- lifetime: no server outlives its worker or the pool ----
# the live MCP servers of this test (by the paths in their commands), or those whose parent
# is $parent
sub servers_of {
    my ($parent) = @_;
    my @p;
    for my $d (glob '/proc/[0-9]*') {
        my $c = SvcTest::read_file("$d/cmdline") // next;
        my $st = SvcTest::read_file("$d/stat") // next;
        my ($pid, $state, $ppid) = $st =~ /^(\d+) \(.*\) (\S) (\d+)/ or next;
        next if $pid == $http_pid || $state eq 'Z' || ($parent && $ppid != $parent);
        push @p, $pid if $c =~ m{\Q$home\E/(?:share|mcp-marker|bad\.starts|alices\.starts)};
    }
    return @p;
}
my ($worker) = $s->worker_pids;
my @mine = servers_of($worker);
is scalar(@mine), 4, 'the one worker runs files, everything, bad and alices';
kill 'KILL', $worker;
ok SvcTest::wait_for(10, sub { !grep { kill 0, $_ } @mine }),
   'SIGKILL of the worker: its servers died with it' or diag "@mine";
$r = chat('root', 'm-after', qq(/tool files__read_file {"path":"$share/a.txt"}));
like answer($r), qr/hello from the share/, 'the new worker starts its own server';
($worker) = $s->worker_pids;
is scalar(servers_of($worker)), 3, 'its own: the three the model sees in a turn of root (not alices)';
$s->stop;
$o->stop;
ok SvcTest::wait_for(10, sub { !servers_of() }), 'after the pools stopped no MCP server is left'
    or diag join ' ', servers_of();
is $fmcp->requests->[-1]{method}, 'DELETE', 'and the HTTP session was ended';

# svc mcp list / call: the same servers from the command line, stopped when it ends
{
    local $ENV{SVC_HOME} = $home;
    local @ENV{keys %env} = values %env;
    my $svc = SvcTest->build . '/svc';
    my $out = `'$svc' mcp list files 2>/dev/null`;
    my $l = eval { $J->decode($out) } // {};
    is $l->{mcp_servers}[0]{state}, 'ready', 'svc mcp list files: ready';
    ok((grep { $_->{name} eq 'read_file' } @{ $l->{mcp_servers}[0]{tools} }), 'with its tools');
    `'$svc' mcp list broken 2>/dev/null`;
    is $? >> 8, 1, 'svc mcp list broken: exit 1 (failed)';
    $out = `'$svc' mcp call files read_file '{"path":"$share/a.txt"}' 2>/dev/null`;
    my $c = eval { $J->decode($out) } // {};
    ok $c->{ok} && $c->{text} eq "hello from the share\n", 'svc mcp call: the result' or diag $out;
    `'$svc' mcp call files read_file '{"path":"/etc/passwd"}' 2>/dev/null`;
    is $? >> 8, 1, 'svc mcp call: exit 1 for an error result';
    `'$svc' mcp call nosuch x '{}' 2>/dev/null`;
    is $? >> 8, 1, 'svc mcp call of an unknown server: exit 1';
    ok SvcTest::wait_for(5, sub { !servers_of() }), 'svc leaves no server running';
}

# the exported transcript names the server of each call
my $out = "$home/exp";
{
    local $ENV{SVC_HOME} = $home;
    my $svc = SvcTest->build . '/svc';
    system("'$svc' export --session m-read --out '$out' >/dev/null") == 0 or diag 'svc export failed';
}
my ($md) = glob "$out/*/transcripts/m-read.md";
like SvcTest::read_file($md // '') // '', qr/\*\*Tool call\*\* `files__read_file` \(id `[^`]+`, MCP server `files`\)/,
     'export transcript: the call with its MCP server';
$fmcp->stop;
$fake->stop;

done_testing;
