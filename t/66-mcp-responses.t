#!/usr/bin/perl
# Remote MCP tools in the Responses API (SPEC 16), OpenAI's shape, through nginx: a
# {"type": "mcp"} tool names server-everything over Streamable HTTP (from npm, t/mcp) by a
# URL under mcp.remote_allow, or a configured server by its label alone. The answer carries
# mcp_list_tools (once per server and conversation), mcp_call (arguments, output, error) and,
# when require_approval asks, an mcp_approval_request that the next request's
# mcp_approval_response runs or declines. A URL outside mcp.remote_allow is 422 naming
# tools[i].server_url and svc never connects to it; another user's server is unknown. The
# echo model and the openai provider (FakeOpenAI deciding from a plain prompt) both drive it.
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

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';

my $node = RealMCP::node();
my (undef, $port) = RealMCP::everything_http($node);

# a port svc must never connect to: it is not under mcp.remote_allow
my $trap = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 5) or die;
my $trap_port = $trap->sockport;
my $fmcp = FakeMCP->start;

my $home = SvcTest->make_home('');
my $share = "$home/share";
mkdir $share;
SvcTest::write_file("$share/a.txt", "shared text\n");
SvcTest::write_file("$home/agents.yaml", SvcTest::with_defaults(<<"YAML"));
server:
  users:
    - {id: alice, token_env: ALICE_TOKEN}
    - {id: bob, token_env: BOB_TOKEN}
mcp:
  remote_allow: ["http://127.0.0.1:$port/", "${\ $fmcp->url}"]
mcp_servers:
  - name: files
    command: ["$node", "$RealMCP::FS", "$share"]
    users: [alice]
YAML
my $s = SvcTest->start(home => $home, workers => 2,
                       env => { ALICE_TOKEN => 'tok-a', BOB_TOKEN => 'tok-b' });
my %as = (alice => { Authorization => 'Bearer tok-a' }, bob => { Authorization => 'Bearer tok-b' });
my $URL = "http://127.0.0.1:$port/mcp";

sub create {
    my ($who, %body) = @_;
    return $s->req(POST => '/api/v1/responses', headers => $as{$who},
                   body => { model => 'echo-1', %body });
}
sub dmcp { { type => 'mcp', server_label => 'dmcp', server_url => $URL, @_ } }
sub items { my ($r, $type) = @_; grep { $_->{type} eq $type } @{ $r->{json}{output} // [] } }
sub text_of { my ($m) = items($_[0], 'message'); $m ? $m->{content}[0]{text} : undef }

# ---- refused: addresses ops did not allow, fields svc does not take ----
for my $bad ("http://127.0.0.1:$trap_port/mcp", "http://127.0.0.1:$port\@127.0.0.1:$trap_port/mcp",
             "file:///etc/passwd", "http://localhost:$port/mcp") {
    my $r = create('alice', input => 'hi', tools => [dmcp(server_url => $bad)]);
    is $r->{status}, 422, "refused: $bad";
    is $r->{json}{error}{param}, 'tools[0].server_url', 'naming tools[0].server_url';
}
$trap->blocking(0);
ok !$trap->accept, 'svc never connected to the address it refused';
my $r = create('alice', input => 'hi', tools => [dmcp(connector_id => 'connector_x')]);
is $r->{json}{error}{param}, 'tools[0].connector_id', 'an unsupported field is refused, named';
$r = create('alice', input => 'hi', tools => [dmcp(require_approval => 'sometimes')]);
is $r->{json}{error}{param}, 'tools[0].require_approval', 'a bad require_approval is refused';
$r = create('bob', input => 'hi', tools => [{ type => 'mcp', server_label => 'files' }]);
is $r->{status}, 422, "bob cannot name alice's configured server";
is $r->{json}{error}{param}, 'tools[0].server_url', 'it is unknown to him: a URL is required';

# ---- require_approval never: listed, called, answered ----
$r = create('alice', input => '/tool dmcp__echo {"message":"hi there"}',
            tools => [dmcp(require_approval => 'never', allowed_tools => ['echo', 'get-sum'])]);
is $r->{status}, 200, 'a remote MCP call: 200' or diag $r->{body};
my ($list) = items($r, 'mcp_list_tools');
is $list->{server_label}, 'dmcp', 'mcp_list_tools for the server';
is_deeply [sort map { $_->{name} } @{ $list->{tools} }], ['echo', 'get-sum'], 'its allowed tools';
ok $list->{tools}[0]{input_schema}{properties}, 'each with its input_schema';
my ($call) = items($r, 'mcp_call');
is $call->{server_label}, 'dmcp', 'mcp_call: server_label';
is $call->{name}, 'echo', 'mcp_call: the bare name';
is $call->{arguments}, '{"message":"hi there"}', 'mcp_call: arguments as a JSON string';
is $call->{output}, 'Echo: hi there', 'mcp_call: output';
ok exists $call->{error} && !defined $call->{error}, 'mcp_call: error null';
like $call->{id}, qr/^mcp_/, 'mcp_call: an id';
is text_of($r), 'Tool dmcp__echo returned: Echo: hi there', 'the model saw the result';
is_deeply [map { $_->{type} } @{ $r->{json}{output} }], [qw(mcp_list_tools mcp_call message)],
    "OpenAI's order";
my ($shown) = grep { $_->{type} eq 'mcp' } @{ $r->{json}{tools} };
is $shown->{server_url}, $URL, 'the tool echoed in the response';
my $first = $r->{json}{id};

# the same conversation: no listing again
$r = create('alice', input => '/tool dmcp__get-sum {"a":2,"b":3}', previous_response_id => $first,
            tools => [dmcp(require_approval => 'never')]);
is scalar(items($r, 'mcp_list_tools')), 0, 'listed once per server and conversation';
($call) = items($r, 'mcp_call');
like $call->{output}, qr/\b5\b/, 'get-sum called';

# ---- approval across two requests ----
$r = create('alice', input => '/tool dmcp__echo {"message":"may I"}', tools => [dmcp()]);
my ($ask) = items($r, 'mcp_approval_request');
ok $ask, 'require_approval (default always): an mcp_approval_request';
is $ask->{name}, 'echo', 'naming the tool';
is $ask->{server_label}, 'dmcp', 'and the server';
is $ask->{arguments}, '{"message":"may I"}', 'with the arguments';
is scalar(items($r, 'mcp_call')), 0, 'nothing called yet';
my $sid = $r->{json}{session_id};
my $sum = $s->req(GET => "/api/v1/chat/sessions/$sid", headers => $as{alice})->{json};
is $sum->{status}, 'idle', 'the session waits, idle';
$r = create('alice', previous_response_id => $r->{json}{id}, tools => [dmcp()],
            input => [{ type => 'mcp_approval_response', approve => JSON::PP::true,
                        approval_request_id => $ask->{id} }]);
is $r->{status}, 200, 'approved: 200' or diag $r->{body};
($call) = items($r, 'mcp_call');
is $call->{output}, 'Echo: may I', 'approved: the call ran';
is $call->{approval_request_id}, $ask->{id}, 'approved: mcp_call names the approval request';
is text_of($r), 'Tool dmcp__echo returned: Echo: may I', 'approved: the model went on';
is scalar(items($r, 'mcp_list_tools')), 0, 'approved: no listing again';

$r = create('alice', input => '/tool dmcp__echo {"message":"no"}', tools => [dmcp()]);
($ask) = items($r, 'mcp_approval_request');
$r = create('alice', previous_response_id => $r->{json}{id}, tools => [dmcp()],
            input => [{ type => 'mcp_approval_response', approve => JSON::PP::false,
                        approval_request_id => $ask->{id} }]);
is $r->{status}, 200, 'declined: 200';
is scalar(items($r, 'mcp_call')), 0, 'declined: no call';
like text_of($r), qr/^Tool dmcp__echo failed: The call was declined/, 'declined: the model knows';
$r = create('alice', previous_response_id => $r->{json}{id}, tools => [dmcp()],
            input => [{ type => 'mcp_approval_response', approve => JSON::PP::true,
                        approval_request_id => 'mcpr_nothing' }]);
is $r->{status}, 422, 'an approval for no pending call: 422';
is $r->{json}{error}{param}, 'input[0].approval_request_id', 'naming it';

$r = create('alice', input => '/tool dmcp__echo {"message":"free"}',
            tools => [dmcp(require_approval => { never => { tool_names => ['echo'] } })]);
is((items($r, 'mcp_call'))[0]{output}, 'Echo: free', 'a never filter naming the tool: no approval');
$r = create('alice', input => '/tool dmcp__get-sum {"a":1,"b":1}',
            tools => [dmcp(require_approval => { never => { tool_names => ['echo'] } })]);
ok scalar(items($r, 'mcp_approval_request')), 'a tool it does not name still asks';

# ---- a configured server named by its label alone ----
$r = create('alice', input => qq(/tool files__read_file {"path":"$share/a.txt"}),
            tools => [{ type => 'mcp', server_label => 'files', require_approval => 'never' }]);
is $r->{status}, 200, 'configured server by label: 200' or diag $r->{body};
($list) = items($r, 'mcp_list_tools');
ok $list && (grep { $_->{name} eq 'read_file' } @{ $list->{tools} }), 'listed';
($call) = items($r, 'mcp_call');
is $call->{server_label}, 'files', 'mcp_call from the configured server';
is $call->{output}, "shared text\n", 'its output';

# ---- headers reach the server; values never stored nor logged ----
$r = create('alice', input => '/tool fake__one {"x":1}',
            tools => [{ type => 'mcp', server_label => 'fake', server_url => $fmcp->url,
                        require_approval => 'never', headers => { 'X-Api-Key' => 'k3y-value' },
                        authorization => 'oauth-t0ken' }]);
is((items($r, 'mcp_call'))[0]{output}, 'one: {"x":1}', 'a call through the request\'s own headers');
my ($fc) = grep { ($_->{body}{method} // '') eq 'tools/call' } @{ $fmcp->requests };
is $fc->{headers}{'x-api-key'}, 'k3y-value', 'headers sent';
is $fc->{headers}{authorization}, 'Bearer oauth-t0ken', 'authorization sent as a bearer token';
($shown) = grep { $_->{type} eq 'mcp' } @{ $r->{json}{tools} };
ok !defined $shown->{headers} && !exists $shown->{authorization}, 'not echoed';
my $stored = $s->req(GET => "/api/v1/responses/$r->{json}{id}", headers => $as{alice});
unlike $stored->{body}, qr/k3y-value|oauth-t0ken/, 'not stored';
unlike $s->log, qr/k3y-value|oauth-t0ken/, 'not logged';

# ---- streamed: the same items ----
my $sse = $s->sse('/api/v1/responses', headers => $as{alice}, body => { model => 'echo-1',
    stream => JSON::PP::true, input => '/tool dmcp__echo {"message":"streamed"}',
    tools => [dmcp(require_approval => 'never')] });
my @added = map { $_->{item}{type} } grep { ref && ($_->{type} // '') eq 'response.output_item.done' }
            @{ $sse->{events} };
ok((grep { $_ eq 'mcp_list_tools' } @added) && (grep { $_ eq 'mcp_call' } @added),
   'streamed: mcp_list_tools and mcp_call items') or diag explain \@added;
my ($done) = grep { ref && ($_->{type} // '') eq 'response.completed' } @{ $sse->{events} };
is_deeply [sort map { $_->{type} } @{ $done->{response}{output} }],
    [sort qw(message mcp_list_tools mcp_call)], 'response.completed carries them';

# ---- the openai provider: the model decides to call the remote tool ----
my $fake = FakeOpenAI->start(rules => [{ prompt => qr/echo this/, tool => 'dmcp__echo',
                                         arguments => '{"message":"from the model"}' }]);
my $o = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
    . $fake->base_url . "\n  api_key: sk-x\nmcp:\n  remote_allow: [\"http://127.0.0.1:$port/\"]\n");
$r = $o->req(POST => '/api/v1/responses', body => { model => 'fake-1', input => 'Please echo this.',
    tools => [dmcp(require_approval => 'never')] });
is $r->{status}, 200, 'openai: 200' or diag $r->{body};
is((items($r, 'mcp_call'))[0]{output}, 'Echo: from the model', 'openai: the model called it');
is text_of($r), 'Tool dmcp__echo said: Echo: from the model', 'openai: and read the result';
my ($offered) = grep { $_->{function}{name} eq 'dmcp__echo' } @{ $fake->requests->[0]{body}{tools} // [] };
ok $offered && $offered->{function}{parameters}{properties}{message}, 'openai: offered with its schema';
$o->stop;
$fake->stop;
$s->stop;
$fmcp->stop;

done_testing;
