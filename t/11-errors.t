#!/usr/bin/perl
# HTTP layer errors (SPEC 4.0): 404, 405 + Allow, 413, 400 invalid_json, 422, bad session
# ids in paths, X-Request-Id.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Find;
use SvcTest;

my $s = SvcTest->start(config => "server:\n  max_body_bytes: 2048\n", workers => 2);

sub err_ok {
    my ($r, $status, $code, $name, $param) = @_;
    is $r->{status}, $status, "$name: status $status";
    is $r->{json}{error}{code}, $code, "$name: code $code";
    ok defined $r->{json}{error}{type} && defined $r->{json}{error}{message},
        "$name: type and message";
    ok exists $r->{json}{error}{param}, "$name: param key present";
    is $r->{json}{error}{param}, $param, "$name: param $param" if defined $param;
    like $r->{headers}{'content-type'} // '', qr{^application/json}, "$name: json";
    ok $r->{headers}{'x-request-id'}, "$name: X-Request-Id";
}

sub files_under {
    my ($dir) = @_;
    my @f;
    find(sub { push @f, $File::Find::name if $_ ne '.' }, $dir) if -d $dir;
    return @f;
}

err_ok($s->req(GET => '/api/nope'), 404, 'not_found', 'unknown route');
err_ok($s->req(GET => '/api/health/'), 404, 'not_found', 'trailing slash');
is $s->req(GET => '/api/nope')->{json}{error}{type}, 'not_found_error', '404 type';

my $r = $s->req(DELETE => '/api/health');
err_ok($r, 405, 'method_not_allowed', 'wrong method');
is $r->{headers}{allow}, 'GET, HEAD', 'Allow: GET, HEAD';
$r = $s->req(PUT => '/api/v1/chat/sessions/abc');
is $r->{status}, 405, 'PUT on a session: 405';
like $r->{headers}{allow}, qr/GET/, 'Allow lists GET';
like $r->{headers}{allow}, qr/PATCH/, 'Allow lists PATCH';
$r = $s->req(GET => '/api/chat');
is $r->{status}, 405, 'GET /api/chat: 405';
is $r->{headers}{allow}, 'POST', 'Allow: POST';
# the export route's path is not also the detail of a session named "export", and svc
# makes no session of that name (nothing is written)
$r = $s->req(POST => '/api/chat', body => { session_id => 'export', messages => [{ role => 'user', content => 'x' }] });
err_ok($r, 400, 'invalid_session_id', "a new session named 'export'");
like $r->{json}{error}{message} // '', qr/reserved/, '  says it is reserved';
ok !-e $s->root . '/session_export', '  no directory made';
for my $m (qw(GET PATCH)) {
    $r = $s->req($m => '/api/v1/chat/sessions/export', body => $m eq 'PATCH' ? {} : undef);
    err_ok($r, 405, 'method_not_allowed', "$m /api/v1/chat/sessions/export");
    is $r->{headers}{allow}, 'POST', "  Allow: POST";
}

# 413: over max_body_bytes, answered by us (JSON), nothing written
my $big = '{"messages":[{"role":"user","content":"' . ('x' x 5000) . '"}],"session_id":"big-one"}';
$r = $s->req(POST => '/api/chat', body => $big, headers => { 'content-type' => 'application/json' });
err_ok($r, 413, 'body_too_large', 'oversize body');
ok !-e $s->root . '/session_big-one', 'nothing created for an oversize body';
# a body well over nginx's client_max_body_size is refused by nginx itself
$r = $s->req(POST => '/api/chat', body => ('y' x (3 * 1024 * 1024)));
is $r->{status}, 413, 'huge body: 413 from nginx';
# the server still works
is $s->req(GET => '/api/health')->{status}, 200, 'still serving after 413';

# invalid JSON
err_ok($s->req(POST => '/api/chat', body => '{"messages": [', headers => { 'content-type' => 'application/json' }),
       400, 'invalid_json', 'malformed JSON');
err_ok($s->req(POST => '/api/chat', body => '', headers => { 'content-type' => 'application/json' }),
       400, 'invalid_json', 'empty body');
err_ok($s->req(POST => '/api/chat', body => '[1,2]', headers => { 'content-type' => 'application/json' }),
       400, 'invalid_json', 'not an object');
err_ok($s->req(POST => '/api/chat', body => '{"a":1} trailing', headers => { 'content-type' => 'application/json' }),
       400, 'invalid_json', 'trailing garbage');

# wrong types: 422 invalid_field with param
err_ok($s->req(POST => '/api/chat', body => { messages => 'hello' }), 422, 'invalid_field',
       'messages not an array', 'messages');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'user', content => 'hi' }], stream => 'yes' }),
       422, 'invalid_field', 'stream not a bool', 'stream');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'user', content => 'hi' }], session_id => 42 }),
       422, 'invalid_field', 'session_id not a string', 'session_id');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'user', content => 'hi' }], metadata => { session_id => [] } }),
       422, 'invalid_field', 'metadata.session_id not a string', 'metadata.session_id');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'user', content => 'hi' }], metadata => { session_id => '../x' } }),
       400, 'invalid_session_id', 'metadata.session_id ../x: named as sent (was session_id)', 'metadata.session_id');
# metadata is held to OpenAI's limits (labels.h), on chat and runs as on Responses: a value of
# 513 characters was stored whole in svc_session.json, one that is no string was dropped
for my $c (['/api/chat', { channel => 'c' x 513 }, 'metadata.channel', 'a channel of 513 characters'],
           ['/api/chat', { tier => 5 }, 'metadata.tier', 'a value that is no string'],
           ['/api/chat', { "a\tb" => 'x' }, 'metadata', 'a key with a control character'],
           ['/api/chat/runs', { locale => 'l' x 513 }, 'metadata.locale', 'runs: a locale of 513 characters']) {
    my ($path, $meta, $param, $what) = @$c;
    err_ok($s->req(POST => $path, body => { session_id => 'meta-cut', metadata => $meta,
                                             messages => [{ role => 'user', content => 'hi' }] }),
           422, 'invalid_field', "$path metadata: $what", $param);
}
ok !-e $s->root . '/session_meta-cut', 'metadata refused: no session made';
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'user', content => 5 }] }),
       422, 'invalid_field', 'content not text', 'messages[0].content');
err_ok($s->req(PATCH => '/api/v1/chat/sessions/abc', body => { title => 7 }),
       422, 'invalid_field', 'title not a string', 'title');

# missing fields: 422 missing_field
err_ok($s->req(POST => '/api/chat', body => { model => 'echo-1' }), 422, 'missing_field',
       'no messages', 'messages');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ role => 'assistant', content => 'x' }] }),
       422, 'missing_field', 'no user message', 'messages');
err_ok($s->req(POST => '/api/chat', body => { messages => [{ content => 'x' }] }),
       422, 'missing_field', 'message without role', 'messages[0].role');
err_ok($s->req(PATCH => '/api/v1/chat/sessions/abc', body => {}), 422, 'missing_field',
       'PATCH without title', 'title');

# invalid query parameters; the ranges are core's (query.c), reached through the messages
# route too; the session need not exist for a bad query to be refused first
for my $c (
    ['/api/v1/chat/sessions?limit=abc', 'limit not int', 'limit'],
    ['/api/v1/chat/sessions?limit=0', 'limit 0', 'limit'],
    ['/api/v1/chat/sessions?limit=501', 'limit 501', 'limit'],
    ['/api/v1/chat/sessions?limit=-9223372036854775808', 'limit INT64_MIN', 'limit'],
    ['/api/v1/chat/sessions?limit=99999999999999999999', 'limit beyond int64', 'limit'],
    ['/api/v1/chat/sessions?status=sleeping', 'unknown status', 'status'],
    ['/api/v1/chat/sessions/abc/messages?limit=1001', 'messages limit 1001', 'limit'],
    ['/api/v1/chat/sessions/abc/messages?limit=0', 'messages limit 0', 'limit'],
    ['/api/v1/chat/sessions/abc/messages?offset=-1', 'messages offset -1', 'offset'],
    ['/api/v1/chat/sessions/abc/messages?order=up', 'messages order up', 'order'],
) {
    err_ok($s->req(GET => $c->[0]), 400, 'invalid_query', $c->[1], $c->[2]);
}
err_ok($s->req(PATCH => '/api/v1/chat/sessions/abc', body => { title => '' }), 422,
       'invalid_field', 'empty title', 'title');
err_ok($s->req(PATCH => '/api/v1/chat/sessions/abc', body => { title => 'x' x 201 }), 422,
       'invalid_field', 'title of 201 characters', 'title');
err_ok($s->req(PATCH => '/api/v1/chat/sessions/abc', body => { title => "a\tb" }), 422,
       'invalid_field', 'title with a control character', 'title');
err_ok($s->req(GET => '/api/v1/chat/sessions?include_archived=maybe'), 400, 'invalid_query',
       'bad bool', 'include_archived');
is $s->req(GET => '/api/v1/chat/sessions?limit=5&include_archived=1&cursor=&q=')->{status}, 200,
   'good query ok (empty values are absent)';

# bad session ids in paths: 400 invalid_session_id (or 404), never escaping the root
mkdir $s->root;    # so that a traversal would have somewhere to go
my $outside = $s->home . '/session_x';
mkdir $outside;
my @bad = ('..', '.x', 'x' x 129, '%2e%2e', 'a%2Fb', '%2E%2E%2F%2E%2E', 'a%00b', 'sp%20ace',
           '..%2F..%2Fetc', '%2e');
for my $id (@bad) {
    for my $p ("/api/v1/chat/sessions/$id", "/api/v1/chat/sessions/$id/messages",
               "/api/chat/sessions/$id/tokens") {
        my $r = $s->req(GET => $p);
        # nginx refuses %00 itself (bad_request, through nginx/svc-errors.conf)
        my $want = $id =~ /%00/ ? 'bad_request' : 'invalid_session_id';
        ok(($r->{status} == 400 && $r->{json} && $r->{json}{error}{code} eq $want)
               || ($r->{status} == 404 && $r->{json}),
           "GET $p: 400 invalid_session_id or 404")
            or diag "$r->{status} $r->{body}";
    }
    my $r = $s->req(POST => "/api/v1/chat/sessions/$id/archive");
    ok $r->{status} == 400 || $r->{status} == 404, "archive $id refused";
}
for my $id ('..', '.x', 'x' x 129, '../x', 'a/b', "a\x{0}b", '') {
    my $r = $s->req(POST => '/api/chat', body => { session_id => $id, messages => [{ role => 'user', content => 'hi' }] });
    if ($id eq '') {
        ok $r->{status} == 400 || $r->{status} == 422, 'empty session_id refused';
    } else {
        is $r->{status}, 400, "chat with session_id '" . substr($id, 0, 10) . "': 400";
        is $r->{json}{error}{code}, 'invalid_session_id', 'invalid_session_id';
    }
}
$r = $s->req(POST => '/api/chat', headers => { 'x-session-id' => '../evil' },
             body => { messages => [{ role => 'user', content => 'hi' }] });
is $r->{json}{error}{code}, 'invalid_session_id', 'X-Session-Id is validated too';
is $r->{json}{error}{param}, 'X-Session-Id', '  the error names the header (it said session_id)';
my @escaped = grep { !m{^\Q${\ $s->root}\E} && !m{/serve\.log$} && !m{/agents\.yaml$} && !m{/session_x$} }
              files_under($s->home);
is_deeply \@escaped, [], 'nothing written outside the root' or diag explain \@escaped;
my @in_root = files_under($s->root);
is_deeply \@in_root, [], 'no session created by refused requests' or diag explain \@in_root;

# X-Request-Id: echoed when sane, generated otherwise
$r = $s->req(GET => '/api/health', headers => { 'x-request-id' => 'my-req.1_A' });
is $r->{headers}{'x-request-id'}, 'my-req.1_A', 'sane X-Request-Id echoed';
$r = $s->req(GET => '/api/nope', headers => { 'x-request-id' => 'abc-404' });
is $r->{headers}{'x-request-id'}, 'abc-404', 'echoed on errors too';
for my $bad ('has space', 'x' x 129, 'semi;colon', '<script>') {
    $r = $s->req(GET => '/api/health', headers => { 'x-request-id' => $bad });
    like $r->{headers}{'x-request-id'}, qr/^[0-9a-f]{32}$/, q{insane X-Request-Id replaced by nginx's $request_id};
}
$r = $s->req(GET => '/api/health');
like $r->{headers}{'x-request-id'}, qr/^[0-9a-f]{32}$/, q{nginx's $request_id when absent (REQUEST_ID param)};
isnt $s->req(GET => '/api/health')->{headers}{'x-request-id'}, $r->{headers}{'x-request-id'},
    'generated ids differ';

# one log line per request, with the request id
# a worker writes its log line after the answer went out: wait for it
ok SvcTest::wait_for(10, sub { $s->log =~ qr{GET /api/nope 404 \d+ [\d.]+ms rid=abc-404 sid=-} }),
    'request log line';
unlike $s->log, qr/x{5000}/, 'bodies never logged';

# (after the checks that refused requests made no session)
is $s->req(POST => '/api/chat', body => { session_id => 'meta-512', metadata => { channel => 'c' x 512 },
                                          messages => [{ role => 'user', content => 'hi' }] })->{status},
   200, 'a channel of 512 characters is taken';

# metadata keys svc does not read itself are kept in the session's metadata: a turn's key
# replaces the session's, the others stay; past 16 keys is 422 and nothing is written
sub chat_meta { $s->req(POST => '/api/chat', body => { session_id => 'meta-keep', metadata => $_[0],
                                                          messages => [{ role => 'user', content => 'hi' }] }) }
sub meta_of { $s->req(GET => '/api/v1/chat/sessions/meta-keep')->{json} }
is chat_meta({ team => 'a', channel => 'web', turn_id => 't1' })->{status}, 200, 'a turn with metadata';
is_deeply meta_of()->{metadata}, { team => 'a' }, "the turn's own keys are kept, svc's are not";
is chat_meta({ team => 'b', env => 'prod' })->{status}, 200, 'a second turn';
is_deeply meta_of()->{metadata}, { team => 'b', env => 'prod' }, 'a key given again replaces, new ones join';
my $run = $s->req(POST => '/api/chat/runs', body => { session_id => 'meta-keep', metadata => { via => 'run' },
                                                      messages => [{ role => 'user', content => 'hi' }] });
is $run->{status}, 202, 'a run with metadata';
$s->wait_run($run->{json}{run_id});
is meta_of()->{metadata}{via}, 'run', 'runs keep theirs too';
my $before = meta_of();
err_ok(chat_meta({ map { ("k$_" => 'v') } 1 .. 14 }), 422, 'invalid_field',
       'a turn that would give the session 17 metadata keys', 'metadata');
my $after = meta_of();
is_deeply [$after->{metadata}, $after->{message_count}], [$before->{metadata}, $before->{message_count}],
          'refused: the session unchanged';

$s->stop;

done_testing;
