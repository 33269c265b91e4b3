#!/usr/bin/perl
# Cross-site requests refused (SPEC 19, issue 35 item 3), through scripts/serve's nginx:
# every route of the route table that takes a body (read from cgi/routes.c, so a new route
# is covered) answers 415 unsupported_media_type to a body that is not JSON (text/plain, a
# form, none declared); every state-changing route answers 403 cross_site_refused to an
# Origin of another host, to Origin: null and to Sec-Fetch-Site: cross-site; nothing on disk
# changes. The same requests from the page's own origin, and reads from anywhere, go on. A
# request naming another host (DNS rebinding) gets 421 from nginx's default server.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

my $s = SvcTest->start;
my $port = $s->port;
my $chat = { session_id => 'x1', messages => [{ role => 'user', content => 'hello' }] };
is $s->req(POST => '/api/chat', body => $chat)->{status}, 200, 'a session to aim at';

# every route that is not a read, from the table itself
my $table = SvcTest::read_file(SvcTest->repo . '/cgi/routes.c');
my @writes = $table =~ /\{"(POST|PUT|PATCH|DELETE)",\s*"([^"]+)"/g;
my @routes;
push @routes, [splice(@writes, 0, 2)] while @writes;
cmp_ok scalar(@routes), '>=', 20, scalar(@routes) . ' state-changing routes in cgi/routes.c';
my %id = (session_id => 'x1', conversation_id => 'x1', run_id => 'run_x', response_id => 'resp_x',
          item_id => 'msg_x', message_id => '1', model_id => 'echo-1');
sub path_of { (my $p = $_[0]) =~ s/\{(\w+)\}/$id{$1} \/\/ 'x'/ge; $p }

my $body = '{"session_id":"x1","messages":[{"role":"user","content":"hi"}],"title":"t","items":[]}';
my $before = $s->snapshot;
for my $r (@routes) {
    my ($m, $pat) = @$r;
    my $p = path_of($pat);
    for my $ct ('text/plain', 'application/x-www-form-urlencoded', 'text/json') {
        my $res = $s->req($m => $p, body => $body, headers => { 'content-type' => $ct });
        is "$res->{status} " . ($res->{json} ? $res->{json}{error}{code} : ''), '415 unsupported_media_type',
           "$m $pat, $ct: 415 unsupported_media_type";
    }
    my $r0 = $s->req($m => $p, body => $body, headers => { origin => 'http://attacker.example' });
    is $r0->{status}, 403, "$m $pat, Origin of another host: 403";
    is $r0->{json} && $r0->{json}{error}{code}, 'cross_site_refused', "$m $pat: cross_site_refused";
    is $s->req($m => $p, body => $body, headers => { 'sec-fetch-site' => 'cross-site' })->{status}, 403,
       "$m $pat, Sec-Fetch-Site: cross-site: 403";
}
# a body without any Content-Type (curl drops the header with -H 'Content-Type:')
my $none = `curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type:' --data-binary '$body' http://127.0.0.1:$port/api/chat`;
is $none, 415, 'a body with no Content-Type: 415';
my $curl_d = `curl -s -o /dev/null -w '%{http_code}' -d '$body' http://127.0.0.1:$port/api/chat`;
is $curl_d, 415, 'curl -d alone (a form type): 415';
is $s->req(POST => '/api/chat', body => $body, headers => { origin => 'null' })->{status}, 403, 'Origin: null: 403';
is $s->snapshot, $before, 'nothing on disk changed';

# what is still answered
for my $ct ('application/json', 'application/json; charset=utf-8', 'Application/JSON',
            'application/vnd.example+json; charset=utf-8') {
    is $s->req(POST => '/api/chat', body => $chat, headers => { 'content-type' => $ct })->{status}, 200,
       "Content-Type $ct: taken";
}
is $s->req(POST => '/api/chat', body => $chat,
           headers => { origin => "http://127.0.0.1:$port", 'sec-fetch-site' => 'same-origin' })->{status},
   200, 'the page\'s own origin (the dashboard\'s): taken';
is $s->req(POST => '/api/v1/chat/sessions/x1/archive', headers => { origin => "http://127.0.0.1:$port" })->{status},
   200, 'a POST without a body from the own origin: taken';
is $s->req(POST => '/api/v1/chat/sessions/x1/unarchive')->{status}, 200, 'a POST without a body, no Origin (curl): taken';
is $s->req(GET => '/api/v1/chat/sessions/x1/messages', headers => { origin => 'http://attacker.example',
                                                                    'sec-fetch-site' => 'cross-site' })->{status},
   200, 'a read with a foreign Origin: answered (no CORS header lets the page read it)';
is $s->req(POST => '/api/chat', body => $chat, headers => { 'sec-fetch-site' => 'same-site',
                                                          origin => "http://127.0.0.1:$port" })->{status},
   200, 'Sec-Fetch-Site: same-site with the own origin: taken';

# DNS rebinding: the page's requests name its own host; nginx's default server refuses them
my $reb = `curl -s -w ' %{http_code}' -H 'Host: attacker.example' http://127.0.0.1:$port/api/v1/chat/sessions/x1/messages`;
like $reb, qr/"code":"unknown_host".* 421$/s, 'Host: attacker.example: 421 unknown_host, no session data';
unlike $reb, qr/hello/, 'not a word of the session';
my $own = `curl -s -o /dev/null -w '%{http_code}' -H 'Host: localhost:$port' http://127.0.0.1:$port/api/health`;
is $own, 200, 'Host: localhost: answered';

done_testing;
