#!/usr/bin/perl
# Robustness (black box, through nginx): hostile and malformed input on every route must get
# the SPEC 4.0 status and error object, never a crashed worker, and never a change on disk
# when the request fails. Known bugs are TODO blocks naming them; plain assertions guard what
# already works.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Find;
use Digest::SHA qw(sha256_hex);
use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw(time sleep);
use HTTP::Tiny;
use POSIX ();
use SvcTest;

my $s = SvcTest->start(workers => 2);    # default server.max_body_bytes: 1048576
my $MAX = 1048576;
my $J = JSON::PP->new->utf8->canonical;

# A recursive listing of SVC_HOME with checksums (the request log excluded).
sub snap {
    my %h;
    my $home = $s->home;
    find({ no_chdir => 1, wanted => sub {
        my $p = $File::Find::name;
        return if $p eq $home || $p eq "$home/serve.log";
        my $rel = substr($p, length($home) + 1);
        if (-f $p) {
            open my $fh, '<:raw', $p or return;
            local $/;
            $h{$rel} = sha256_hex(<$fh> // '');
        } else {
            $h{$rel} = 'd';
        }
    } }, $home);
    return \%h;
}

sub changed {
    my ($a, $b) = @_;
    my %k = map { $_ => 1 } keys %$a, keys %$b;
    return grep { ($a->{$_} // '') ne ($b->{$_} // '') } sort keys %k;
}

# An error answer per SPEC 4.0; the disk must not change when $nochange.
sub err_ok {
    my ($r, $status, $code, $name, %o) = @_;
    is $r->{status}, $status, "$name: status $status" or diag substr($r->{body} // '', 0, 300);
    my $e = $r->{json} && ref $r->{json} eq 'HASH' ? $r->{json}{error} : undef;
    ok $e && defined $e->{message} && defined $e->{type} && exists $e->{param},
        "$name: JSON error object";
    is $e && $e->{code}, $code, "$name: code $code" if defined $code;
    is $e && $e->{param}, $o{param}, "$name: param $o{param}" if exists $o{param};
    ok $r->{headers}{'x-request-id'}, "$name: X-Request-Id";
}

# Run $code and check that nothing changed under SVC_HOME.
sub no_change {
    my ($name, $code) = @_;
    my $before = snap();
    my $r = $code->();
    my @d = changed($before, snap());
    ok !@d, "$name: nothing changed on disk" or diag "changed: @d[0 .. ($#d < 4 ? $#d : 4)]";
    return $r;
}

sub chat { my ($b, %o) = @_; $s->req(POST => '/api/chat', body => $b, %o) }
sub raw_chat {
    my ($b, %h) = @_;
    $s->req(POST => '/api/chat', body => $b,
            headers => { 'content-type' => 'application/json', %h });
}
# GET /api/health with a raw X-Request-Id (HTTP::Tiny refuses control characters):
# (status, echoed X-Request-Id, response head)
sub raw_health {
    my ($v) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $s->port, Timeout => 10)
        or die "connect: $!";
    print $sock "GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Request-Id: $v\r\n\r\n";
    local $/;
    my $resp = <$sock> // '';
    close $sock;
    my ($head) = split /\r\n\r\n/, $resp, 2;
    $head //= '';
    my ($st) = $head =~ m{^HTTP/1\.\d (\d+)};
    my ($rid) = $head =~ /^X-Request-Id: ?([^\r\n]*)/mi;
    return ($st // 0, $rid, $head);
}

sub sess_dir { $s->root . "/session_$_[0]" }
sub read_json { my $t = SvcTest::read_file($_[0]); defined $t ? eval { $J->decode($t) } : undef }
my $U = [{ role => 'user', content => 'hi' }];

is chat({ session_id => 'seed', messages => $U })->{status}, 200, 'a first session';

# --- malformed JSON: 400 invalid_json, nothing written ------------------------------------
for my $c (['[' x 10000 . ']' x 10000, '10000 nested arrays'],
           ['{"messages":' . '[' x 10000 . ']' x 10000 . '}', '10000 nested arrays in messages'],
           ['{"a":' x 10000 . '1' . '}' x 10000, '10000 nested objects'],
           [qq({"session_id":"u8","messages":[{"role":"user","content":"a\xff\xfeb"}]}), 'invalid UTF-8'],
           [qq({"session_id":"u8","messages":[{"role":"user","content":"a\xc0\xafb"}]}), 'overlong UTF-8'],
           [qq({"session_id":"u8","messages":[{"role":"user","content":"a\xed\xa0\x80b"}]}), 'UTF-8 surrogate'],
           [qq({"session_id":"u8","messages":[{"role":"user","content":"a\x00b"}]}), 'raw NUL byte'],
           ['{"messages":[{"role":"user","content":"x"}],"temperature":NaN}', 'NaN'],
           ["\xef\xbb\xbf" . '{"messages":[{"role":"user","content":"x"}]}', 'BOM']) {
    my ($body, $name) = @$c;
    my $r = no_change($name, sub { raw_chat($body) });
    err_ok($r, 400, 'invalid_json', $name);
}

# --- body size: exactly max_body_bytes is served, one byte more is 413 -------------------
sub sized {
    my ($sid, $n) = @_;
    my $pre = qq({"session_id":"$sid","messages":[{"role":"user","content":");
    my $post = '"}]}';
    return $pre . ('x' x ($n - length($pre) - length($post))) . $post;
}
{
    my $at = sized('sz-at', $MAX);
    is length($at), $MAX, 'body of exactly max_body_bytes';
    my $r = raw_chat($at);
    is $r->{status}, 200, 'body at the limit: 200';
    ok -d sess_dir('sz-at'), 'body at the limit: session stored';
    for my $ep (['POST', '/api/chat'], ['POST', '/api/chat/runs'],
                ['POST', '/api/v1/chat/completions']) {
        my $over = sized('sz-over', $MAX + 1);
        $r = no_change("$ep->[1] one byte over",
                       sub { $s->req($ep->[0] => $ep->[1], body => $over,
                                     headers => { 'content-type' => 'application/json' }) });
        err_ok($r, 413, 'body_too_large', "$ep->[1] one byte over");
    }
    $r = no_change('PATCH one byte over', sub {
        $s->req(PATCH => '/api/v1/chat/sessions/seed',
                body => '{"title":"' . ('t' x ($MAX - 11)) . '"}',
                headers => { 'content-type' => 'application/json' }) });
    err_ok($r, 413, 'body_too_large', 'PATCH one byte over');
    # chunked request bodies (no Content-Length from the client)
    $r = raw_chat(sized('ch-at', $MAX), 'transfer-encoding' => 'chunked');
    is $r->{status}, 200, 'chunked body at the limit: 200';
    $r = no_change('chunked one byte over',
                   sub { raw_chat(sized('ch-over', $MAX + 1), 'transfer-encoding' => 'chunked') });
    err_ok($r, 413, 'body_too_large', 'chunked one byte over');
}

# --- wrong types in POST /api/chat: 422 invalid_field with param, nothing written --------
my @types = (
    [{ messages => { role => 'user', content => 'hi' } }, 'messages'],
    [{ messages => 'hi' }, 'messages'],
    [{ messages => [5] }, 'messages[0]'],
    [{ messages => [{ role => 'user', content => 5 }] }, 'messages[0].content'],
    [{ messages => [{ role => 'user', content => { a => 1 } }] }, 'messages[0].content'],
    [{ messages => [{ role => 'user', content => JSON::PP::true }] }, 'messages[0].content'],
    [{ messages => [{ role => 1, content => 'x' }] }, 'messages[0].role'],
    [{ messages => $U, stream => 'true' }, 'stream'],
    [{ messages => $U, stream => 1 }, 'stream'],
    [{ messages => $U, metadata => [1] }, 'metadata'],
    [{ messages => $U, metadata => 'x' }, 'metadata'],
    [{ messages => $U, metadata => { event_format => 5 } }, 'metadata.event_format'],
    [{ messages => $U, metadata => { locale => 5 } }, 'metadata.locale'],
    [{ messages => $U, metadata => { channel => [] } }, 'metadata.channel'],
    [{ messages => $U, session_id => 123 }, 'session_id'],
    [{ messages => $U, model => 5 }, 'model'],
    [{ messages => $U, user => 5 }, 'user'],
    [{ messages => $U, stream => JSON::PP::true, stream_options => [1] }, 'stream_options'],
    [{ messages => $U, stream => JSON::PP::true, stream_options => { include_usage => 'y' } },
     'stream_options.include_usage'],
    [{ message => 5 }, 'message'],
);
for my $t (@types) {
    my ($body, $param) = @$t;
    my $name = 'wrong type ' . $J->encode($body);
    $name = substr($name, 0, 90);
    my $r = no_change($name, sub { chat($body) });
    err_ok($r, 422, 'invalid_field', $name, param => $param);
}
for my $id ('../x', '', 'a' x 129, '.hidden') {
    my $r = no_change("session_id '$id'", sub { chat({ messages => $U, session_id => $id }) });
    err_ok($r, 400, 'invalid_session_id', "session_id '" . substr($id, 0, 10) . "'");
}
{
    my $r = no_change('session_id with \u0000', sub {
        raw_chat('{"session_id":"ab\u0000cd","messages":[{"role":"user","content":"x"}]}') });
    err_ok($r, 400, 'invalid_session_id', 'session_id with \u0000');
    $r = no_change('X-Session-Id of 1000 chars',
                   sub { chat({ messages => $U }, headers => { 'x-session-id' => 'a' x 1000 }) });
    err_ok($r, 400, 'invalid_session_id', 'X-Session-Id of 1000 chars');
}
# duplicate keys: the last one wins, consistently
{
    my $r = raw_chat('{"session_id":"dupA","session_id":"dupB","messages":[{"role":"user","content":"x"}]}');
    is $r->{status}, 200, 'duplicate key: accepted';
    is $r->{json}{session_id}, 'dupB', 'duplicate key: the last one wins';
    ok !-e sess_dir('dupA'), 'duplicate key: the first value is not used';
    $r = no_change('duplicate messages key', sub {
        raw_chat('{"messages":[{"role":"user","content":"x"}],"messages":5}') });
    err_ok($r, 422, 'invalid_field', 'duplicate messages key, last one wrong', param => 'messages');
}

{
    for my $c ([[5], 'part not an object'], [[{ type => 'text', text => 5 }], 'text part text 5']) {
        my $r = chat({ messages => [{ role => 'user', content => $c->[0] }] });
        is $r->{json} && $r->{json}{error}{code}, 'invalid_field', "$c->[1]: invalid_field";
        like $r->{json} && $r->{json}{error}{param} // '', qr/^messages\[0\]\.content/,
            "$c->[1]: param names the content";
    }
}

{
    my $r = no_change('metadata.turn_id {}',
                      sub { chat({ session_id => 'tid', messages => $U, metadata => { turn_id => {} } }) });
    is $r->{status}, 422, 'metadata.turn_id {}: 422';
    is $r->{json} && $r->{json}{error}{param}, 'metadata.turn_id', 'param metadata.turn_id';
}

{
    my @hist = (
        [[{ role => 'assistant', content => 5 }], 'messages[0].content', 'assistant content 5'],
        [[{ role => 'assistant', content => undef, tool_calls => 'zz' }],
         'messages[0].tool_calls', 'tool_calls a string'],
        [[{ role => 'assistant', content => undef,
            tool_calls => [{ id => 5, type => 'function', function => 5 }] }],
         'messages[0].tool_calls[0]', 'tool_calls[0] id and function numbers'],
        [[{ role => 'tool', content => 't' }], 'messages[0].tool_call_id', 'tool without tool_call_id'],
        [[{ role => 'wizard', content => 'w' }], 'messages[0].role', 'unknown role'],
        # these two were stored: the arguments as {} and a toolUse with no name
        [[{ role => 'assistant', content => undef, tool_calls => [{ id => 'c1', type => 'function',
            function => { name => 'clock', arguments => 'not json' } }] }, { role => 'tool', tool_call_id => 'c1', content => 'r' }],
         'messages[0].tool_calls[0].function.arguments', 'arguments that are no JSON object'],
        [[{ role => 'assistant', content => undef, tool_calls => [{ id => 'c1', type => 'function',
            function => { name => '', arguments => '{}' } }] }, { role => 'tool', tool_call_id => 'c1', content => 'r' }],
         'messages[0].tool_calls[0].function.name', 'an empty tool name'],
        [[{ role => 'assistant', content => undef, tool_calls => [{ id => 'c1', type => 'custom',
            function => { name => 'clock', arguments => '{}' } }] }, { role => 'tool', tool_call_id => 'c1', content => 'r' }],
         'messages[0].tool_calls[0].type', 'a tool call type that is not function (it was taken for one)'],
    );
    my $i = 0;
    for my $h (@hist) {
        my ($msgs, $param, $name) = @$h;
        my $sid = 'hist' . $i++;
        my $r = no_change("history $name",
                          sub { chat({ session_id => $sid, messages => [@$msgs, { role => 'user', content => 'x' }] }) });
        is $r->{status}, 422, "history $name: 422";
        like $r->{json} && $r->{json}{error}{param} // '', qr/^\Q$param\E/, "history $name: param $param";
    }
}

# --- NUL and odd code points in content -----------------------------------------------------
{
    my $r = raw_chat('{"session_id":"lone","messages":[{"role":"user","content":"a\ud800b"}]}');
    is $r->{status}, 200, 'lone surrogate escape: accepted';
    my $m = read_json(sess_dir('lone') . '/agents/agent_svc-agent/messages/message_0.json');
    ok $m, 'lone surrogate: the message file is valid JSON';
}
{
    my $r = raw_chat('{"session_id":"nulc","messages":[{"role":"user","content":"a\u0000b"}]}');
    if ($r->{status} == 200) {
        my $m = read_json(sess_dir('nulc') . '/agents/agent_svc-agent/messages/message_0.json');
        is $m && $m->{message}{content}[0]{text}, "a\x{0}b", 'content with NUL stored whole';
    } else {
        is $r->{status}, 422, 'content with NUL refused with 422 instead';
    }
}

# --- JSON numbers in stored native files (Python json.dumps compatible) --------------------
{
    my $args = '{"hundred":1E+2,"e15":1e15,"e16":1e16,"f":1.0,"small":0.0025,"tiny":1e-05}';
    my $r = chat({ session_id => 'nums', messages => [
        { role => 'assistant', content => undef, tool_calls => [
            { id => 'c1', type => 'function', function => { name => 'clock', arguments => $args } }] },
        { role => 'tool', tool_call_id => 'c1', content => 'r' },
        { role => 'user', content => 'x' }] });
    is $r->{status}, 200, 'history with tool arguments: 200';
    my $t = SvcTest::read_file(sess_dir('nums') . '/agents/agent_svc-agent/messages/message_0.json') // '';
    like $t, qr/"f": 1\.0\b/, '1.0 stays 1.0';
    like $t, qr/"small": 0\.0025\b/, '0.0025 stays 0.0025';
    like $t, qr/"hundred": 100\.0\b/, '1E+2 written as 100.0, as Python does';
    like $t, qr/"e15": 1000000000000000\.0\b/, '1e15 written as 1000000000000000.0';
    like $t, qr/"e16": 1e\+16\b/, '1e16 written as 1e+16';
    like $t, qr/"tiny": 1e-05\b/, '1e-05 written as 1e-05';

    # integers beyond 64 bits keep their digits, as Python's json keeps them (SPEC 17)
    for my $big ('123456789012345678901234567890', '-9223372036854775809', '9223372036854775808') {
        (my $sid = "big$big") =~ s/-/m/;
        $r = chat({ session_id => $sid, messages => [
                { role => 'assistant', content => undef, tool_calls => [{ id => 'c1', type => 'function',
                    function => { name => 'clock', arguments => "{\"n\":$big}" } }] },
                { role => 'tool', tool_call_id => 'c1', content => 'r' },
                { role => 'user', content => 'x' }] });
        is $r->{status}, 200, "arguments with $big: 200";
        $t = SvcTest::read_file(sess_dir($sid) . '/agents/agent_svc-agent/messages/message_0.json') // '';
        like $t, qr/"n": \Q$big\E\n/, "$big stored with every digit";
        $r = $s->req(GET => "/api/v1/chat/sessions/$sid/messages");
        like $r->{body}, qr/\\"n\\":\Q$big\E\b/, "$big shown with every digit in the arguments";
    }
    $r = chat({ session_id => 'bigok', messages => [
        { role => 'assistant', content => undef, tool_calls => [{ id => 'c1', type => 'function',
            function => { name => 'clock', arguments => '{"max":9223372036854775807,"min":-9223372036854775808}' } }] },
        { role => 'tool', tool_call_id => 'c1', content => 'r' },
        { role => 'user', content => 'x' }] });
    is $r->{status}, 200, 'the int64 limits themselves are fine';
    $t = SvcTest::read_file(sess_dir('bigok') . '/agents/agent_svc-agent/messages/message_0.json') // '';
    like $t, qr/"max": 9223372036854775807\b/, 'int64 max kept exactly';
    like $t, qr/"min": -9223372036854775808\b/, 'int64 min kept exactly';
}

# --- PATCH titles ------------------------------------------------------------------------------
{
    my $P = '/api/v1/chat/sessions/seed';
    my $sc = sub { read_json(sess_dir('seed') . '/svc_session.json') };
    my $r = $s->req(PATCH => $P, body => { title => "\x{1F600} Gr\x{fc}\x{df}e \x{65e5}\x{672c}" });
    is $r->{status}, 200, 'emoji title: 200';
    is $sc->()->{title}, "\x{1F600} Gr\x{fc}\x{df}e \x{65e5}\x{672c}", 'emoji title stored as given';
    $r = $s->req(PATCH => $P, body => { title => "\x{1F600}" x 200 });
    is $r->{status}, 200, '200 emoji (code points): 200';
    is length($sc->()->{title}), 200, '200 code points stored';
    for my $c (["\x{1F600}" x 201, '201 emoji'], ['a' x 201, '201 ascii'], ['', 'empty'],
               ["a\nb", 'newline'], ["a\x01b", 'control char'], [["x"], 'array']) {
        $r = no_change("title $c->[1]", sub { $s->req(PATCH => $P, body => { title => $c->[0] }) });
        err_ok($r, 422, 'invalid_field', "title $c->[1]", param => 'title');
    }
    $r = no_change('title \u0000', sub {
        $s->req(PATCH => $P, body => '{"title":"a\u0000b"}', headers => { 'content-type' => 'application/json' }) });
    err_ok($r, 422, 'invalid_field', 'title \u0000', param => 'title');
    $r = no_change('title null', sub { $s->req(PATCH => $P, body => { title => undef }) });
    err_ok($r, 422, 'missing_field', 'title null', param => 'title');
    $r = no_change('PATCH unknown session', sub { $s->req(PATCH => '/api/v1/chat/sessions/nosuch', body => { title => 'x' }) });
    err_ok($r, 404, 'session_not_found', 'PATCH unknown session');
    $r = $s->req(PUT => $P, body => {});
    err_ok($r, 405, 'method_not_allowed', 'PUT on a session');
    like $r->{headers}{allow} // '', qr/PATCH/, 'Allow lists PATCH';
    like $r->{headers}{allow} // '', qr/DELETE/, 'and DELETE';
}
{
    chat({ session_id => 'ctl', messages => [{ role => 'user', content => "a\x01b\x{85}c" }] });
    my $t = (read_json(sess_dir('ctl') . '/svc_session.json') // {})->{title} // '';
    unlike $t, qr/[\x00-\x1f\x7f-\x9f]/, 'derived title has no control characters';
    is $t, 'a b c', 'control characters become spaces in the derived title';
}

# --- query parameters --------------------------------------------------------------------------
for my $q (['limit=99999999999999999999', 'limit'], ['limit=-1', 'limit'], ['limit=1e3', 'limit'],
           ['limit=0x10', 'limit'], ['limit=5%00', 'limit'], ['limit=501', 'limit'],
           ['cursor=abc', 'cursor'], ['cursor=-5', 'cursor'], ['cursor=99999999999', 'cursor'],
           ['cursor=%FF%FE', 'cursor'], ['cursor=%00', 'cursor'],
           ['status=%00', 'status'], ['include_archived=maybe', 'include_archived'],
           ['limit=5&limit=6', 'limit'], ['status=idle&status=error', 'status']) {  # one was dropped: 200
    err_ok($s->req(GET => "/api/v1/chat/sessions?$q->[0]"), 400, 'invalid_query', "list $q->[0]",
           param => $q->[1]);
}
is $s->req(GET => '/api/v1/chat/sessions?q=%FF%FE')->{status}, 200, 'q with invalid UTF-8: 200';
is $s->req(GET => '/api/v1/chat/sessions?q=%00')->{status}, 200, 'q with NUL: 200';
for my $q (['offset=-1', 'offset'], ['offset=99999999999999999999', 'offset'], ['offset=1e3', 'offset'],
           ['limit=1e3', 'limit'], ['limit=99999999999999999999', 'limit'], ['order=DESC', 'order'],
           ['order=asc&order=desc', 'order']) {
    err_ok($s->req(GET => "/api/v1/chat/sessions/seed/messages?$q->[0]"), 400, 'invalid_query',
           "messages $q->[0]", param => $q->[1]);
}
is $s->req(GET => '/api/v1/chat/sessions/seed/messages?offset=9223372036854775807&order=desc')->{status},
   200, 'messages offset INT64_MAX: 200';
# a parameter the route does not read is refused, named (they were ignored: ?lmit=5 gave 20)
for my $q (['/api/v1/chat/sessions?lmit=5', 'lmit'], ['/api/v1/chat/sessions/seed?limit=5', 'limit'],
           ['/api/v1/chat/sessions/seed/messages?cursor=x', 'cursor'],
           ['/api/v1/chat/sessions/search?q=a&order=asc', 'order'], ['/api/v1/models?limit=2', 'limit'],
           ['/api/v1/conversations?include=x', 'include'],
           ['/api/v1/chat/sessions?limit=5&api-version=2024-10-21', 'api-version']) {
    err_ok($s->req(GET => $q->[0]), 400, 'invalid_query', "$q->[0]: unknown parameter", param => $q->[1]);
}
is $s->req(GET => '/api/v1/conversations?limit=2&order=asc')->{status}, 200, 'a page\'s parameters: 200';
# a parameter without a name (the HTTP fuzzer found the check reading past its list on it)
for my $q ('/api/v1/conversations?=5', '/api/v1/chat/sessions/seed/messages?=0&order=desc', '/api/v1/chat/sessions?&=') {
    my $r = $s->req(GET => $q);
    is_deeply [$r->{status}, $r->{json} && $r->{json}{error}{code}], [400, 'invalid_query'], "$q: 400 invalid_query";
}

# --- paths and headers -----------------------------------------------------------------------
for my $p ('/api/v1/chat/sessions/%FF%FE', "/api/v1/chat/sessions/\xff", '/api/v1/chat/sessions/%C3%A9',
           '/api/v1/chat/sessions/' . 'a' x 5000, '/api/v1/chat/sessions/seed%2Fmessages') {
    err_ok($s->req(GET => $p), 400, 'invalid_session_id', 'GET ' . substr($p, 0, 40));
}
err_ok($s->req(GET => '/api/' . 'a' x 4000), 404, 'not_found', 'a 4000-byte path');
{
    my $r = $s->req(GET => '/api/health', headers => { 'x-request-id' => 'a' x 1000 });
    is $r->{status}, 200, 'X-Request-Id of 1000 chars: 200';
    ok length($r->{headers}{'x-request-id'} // '') && length($r->{headers}{'x-request-id'}) <= 128,
        'X-Request-Id of 1000 chars: replaced by a sane one';
    my ($st, $rid) = raw_health("ab\x01cd");
    is $st, 200, 'X-Request-Id with a control char: 200';
    ok defined $rid && $rid =~ /\A[\x21-\x7e]+\z/, 'X-Request-Id with a control char: replaced';
    $r = $s->req(GET => '/api/health', headers => { 'x-request-id' => 'ok-123' });
    is $r->{headers}{'x-request-id'}, 'ok-123', 'a sane id is echoed';
    # CR/LF: only a raw socket can send them
    for my $v ("abc\nX-Injected: 1", "abc\r\n def", "abc\rdef") {
        my ($st, $rid, $head) = raw_health($v);
        unlike $head, qr/^X-Injected/mi, 'X-Request-Id with CR/LF: no header injected';
        ok !defined $rid || $rid !~ /[\r\n ]/, 'X-Request-Id with CR/LF: not echoed raw';
    }
}
{
    my $nul = $s->req(GET => '/api/v1/chat/sessions/seed%00');
    is $nul->{status}, 400, '%00 in a path: 400';
    my $idem = no_change('Idempotency-Key of 10 KB', sub {
        chat({ session_id => 'idem10k', messages => $U }, headers => { 'idempotency-key' => 'k' x 10240 }) });
    my $long = $s->req(GET => '/api/' . 'a' x 9000);
    # nginx/svc-errors.conf (included by scripts/serve) answers nginx's own refusals in JSON
    ok $nul->{json} && $nul->{json}{error}, '%00 in a path: JSON error';
    ok $nul->{headers}{'x-request-id'}, '%00 in a path: X-Request-Id';
    ok $idem->{json} && $idem->{json}{error}, 'Idempotency-Key of 10 KB: JSON error'
        or diag "status $idem->{status}";
    ok $long->{json} && $long->{json}{error}, 'a 9000-byte URI: JSON error'
        or diag "status $long->{status}";
}
{
    my $r = chat({ session_id => 'idem7k', messages => $U }, headers => { 'idempotency-key' => 'k' x 7000 });
    is $r->{status}, 200, 'Idempotency-Key of 7 KB: 200';
    my $r2 = chat({ session_id => 'idem7k', messages => $U }, headers => { 'idempotency-key' => 'k' x 7000 });
    is $r2->{json}{run_id}, $r->{json}{run_id}, 'Idempotency-Key of 7 KB: replayed';
}
{
    my $r = no_change('archive with an oversize body', sub {
        $s->req(POST => '/api/v1/chat/sessions/seed/archive', body => 'x' x ($MAX + 1)) });
    err_ok($r, 413, 'body_too_large', 'archive with an oversize body');
    $r = $s->req(GET => '/api/health', body => 'x' x ($MAX + 1));
    is $r->{status}, 413, 'even health refuses an oversize body';
}
{
    my $r = $s->req(HEAD => '/api/health');
    is $r->{status}, 200, 'HEAD /api/health: 200';
    is $r->{body} // '', '', 'HEAD: no body';
    ok $r->{headers}{'content-length'} > 0, 'HEAD: the GET answer\'s Content-Length';
    ok $r->{headers}{'x-request-id'}, 'HEAD: X-Request-Id';
    $r = $s->req(HEAD => '/api/v1/chat/sessions/seed');
    is $r->{status}, 200, 'HEAD on the session detail: 200';
    $r = $s->req(HEAD => '/api/chat');
    is $r->{status}, 405, 'HEAD on a POST route: 405';
    is $r->{headers}{allow}, 'POST', 'Allow: POST';
}

# --- run event cursors -------------------------------------------------------------------------
{
    my $r = $s->req(POST => '/api/chat/runs', body => { session_id => 'runc', messages => $U });
    is $r->{status}, 202, 'run started';
    my $rid = $r->{json}{run_id};
    SvcTest::wait_for(10, sub { ($s->req(GET => "/api/chat/runs/$rid")->{json}{status} // '') ne 'running' });
    for my $c ('abc', '-5', '99999999999', '1e3', '%00') {
        err_ok($s->req(GET => "/api/chat/runs/$rid/events?cursor=$c"), 400, 'invalid_query',
               "events cursor=$c", param => 'cursor');
    }
    my $t0 = time;
    $r = $s->req(GET => "/api/chat/runs/$rid/events?cursor=1000");
    is $r->{status}, 200, 'cursor past the end of a finished run: 200';
    ok time - $t0 < 5, 'cursor past the end of a finished run: ends at once';
    err_ok($s->req(GET => '/api/chat/runs/..%2F..%2Fsession_seed'), 404, 'run_not_found', 'run id traversal');
    err_ok($s->req(POST => "/api/chat/runs/$rid/cancel"), 409, 'run_not_active', 'cancel a finished run');
}

# --- concurrent archive / unarchive / PATCH / chat on one session --------------------------------
{
    my $sid = 'conc';
    chat({ session_id => $sid, messages => $U });
    my $stop = time + 3;
    my @kids;
    for my $i (1 .. 10) {
        my $pid = fork // die "fork: $!";
        if (!$pid) {
            my $bad = 0;
            my $h = HTTP::Tiny->new(timeout => 30, keep_alive => 0);
            my $n = 0;
            while (time < $stop) {
                my $op = $n++ % 5;
                my $r = $op == 0 ? $h->post($s->url("/api/v1/chat/sessions/$sid/archive"))
                      : $op == 1 ? $h->post($s->url("/api/v1/chat/sessions/$sid/unarchive"))
                      : $op == 2 ? $h->request(PATCH => $s->url("/api/v1/chat/sessions/$sid"),
                                               { content => $J->encode({ title => "t$i-$n \x{2713}" }) })
                      : $h->post($s->url('/api/chat'),
                                 { content => $J->encode({ session_id => $sid, messages => [{ role => 'user', content => "m$i-$n" }] }) });
                $bad++ if $r->{status} >= 500 || !eval { $J->decode($r->{content}); 1 };
            }
            POSIX::_exit($bad ? 1 : 0);
        }
        push @kids, $pid;
    }
    my $failed = 0;
    for (@kids) { waitpid($_, 0); $failed++ if $? }
    is $failed, 0, 'concurrent clients: every answer JSON, no 5xx';
    my $sc = read_json(sess_dir($sid) . '/svc_session.json');
    ok $sc, 'sidecar is valid JSON';
    opendir my $dh, sess_dir($sid) . '/agents/agent_svc-agent/messages';
    my $files = grep { /^message_\d+\.json$/ } readdir $dh;
    is $sc->{message_count}, $files, 'message_count equals the message files';
    isnt $sc->{status}, 'running', 'status not stuck in running';
    is $sc->{current_run}, undef, 'no current_run';
    my @turns = split /\n/, SvcTest::read_file(sess_dir($sid) . '/svc_turns.jsonl') // '';
    is $sc->{turn_count}, scalar(@turns), 'turn_count equals the turn lines';
    my $sum = $s->req(GET => "/api/v1/chat/sessions/$sid")->{json};
    is $sum->{title}, $sc->{title}, 'summary title equals the sidecar';
    is $sum->{archived} ? 1 : 0, $sc->{archived} ? 1 : 0, 'summary archived equals the sidecar';
    my $l = $s->req(GET => '/api/v1/chat/sessions?include_archived=true&limit=500')->{json};
    my ($row) = grep { $_->{session_id} eq $sid } @{ $l->{sessions} };
    is $row && $row->{message_count}, $sc->{message_count}, 'listing agrees on message_count';
    is $row && $row->{title}, $sc->{title}, 'listing agrees on the title';
}

# --- paging with cursors while sessions are created ------------------------------------------------
{
    for my $i (1 .. 60) {
        chat({ session_id => sprintf('pg-%03d', $i), messages => $U });
    }
    my $all = $s->req(GET => '/api/v1/chat/sessions?include_archived=true&limit=500')->{json}{sessions};
    my @before = map { $_->{session_id} } @$all;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        my $h = HTTP::Tiny->new(timeout => 30, keep_alive => 0);
        my $end = time + 20;
        for my $k (1 .. 400) {
            last if time > $end;
            $h->post($s->url('/api/chat'),
                     { content => $J->encode({ session_id => "new-$k", messages => $U }) });
        }
        POSIX::_exit(0);
    }
    my (@seen, $cur);
    my $pages = 0;
    do {
        my $r = $s->req(GET => '/api/v1/chat/sessions?include_archived=true&limit=7'
                               . (defined $cur ? "&cursor=$cur" : ''));
        push @seen, map { $_->{session_id} } @{ $r->{json}{sessions} || [] };
        $cur = $r->{json}{next_cursor};
        sleep 0.02;
    } while (defined $cur && ++$pages < 200);
    kill 'TERM', $pid;
    waitpid($pid, 0);
    my %n;
    $n{$_}++ for @seen;
    is scalar(grep { $n{$_} > 1 } keys %n), 0, 'paging: no session repeated';
    my %pre = map { $_ => 1 } @before;
    is_deeply [grep { $pre{$_} } @seen], \@before, 'paging: the earlier sessions, none skipped, in order';
}

# --- no crashed worker --------------------------------------------------------------------------
is $s->req(GET => '/api/health')->{status}, 200, 'still serving';
unlike $s->log, qr/killed by signal|AddressSanitizer|runtime error:/, 'no worker crash in the log';

$s->stop;
done_testing;
