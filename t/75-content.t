#!/usr/bin/perl
# Images and documents both ways (SPEC 17), svc only: chat image_url / file parts and
# Responses input_image / input_file parts are stored as Strands image / document blocks
# (bytes as {"__bytes_encoded__": true, "data"}, an http(s) image as a URL location), the
# echo model says what it was given, the session API shows "parts" (data URLs only with
# ?include=bytes), conversation items show input_image / input_file, limits.max_image_bytes
# answers 413 and bad parts 422 by name with nothing stored, search indexes text only, and
# an `openai` provider (t/lib/FakeOpenAI.pm) receives the parts in OpenAI's format.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use MIME::Base64 qw(encode_base64 decode_base64);
use SvcTest;
use FakeOpenAI;

delete @ENV{qw(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY)};
$ENV{no_proxy} = $ENV{NO_PROXY} = '127.0.0.1,localhost';
my $J = $SvcTest::JSON;

# a 1x1 PNG, 68 bytes; a small text file; a "pdf"
my $PNG = decode_base64('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mNgAAIAAAUAAen63NgAAAAASUVORK5CYII=');
my $PNG64 = encode_base64($PNG, '');
my $TXT64 = encode_base64("line one\nline two\n", '');
my $PDF64 = encode_base64("%PDF-1.4\n% tiny\n", '');
my $BIG64 = encode_base64('x' x 1001, '');

my $s = SvcTest->start(config => "limits:\n  max_image_bytes: 1000\n");
sub msgs_dir { $s->root . "/session_$_[0]/agents/agent_svc-agent/messages" }
sub stored {
    my ($sid, $id) = @_;
    my $t = SvcTest::read_file(msgs_dir($sid) . "/message_$id.json");
    return $t ? $J->decode($t)->{message} : undef;
}
sub chat { $s->req(POST => '/api/v1/chat/completions', body => { session_id => $_[0], messages => $_[1] }) }
sub answer { $_[0]{json}{choices}[0]{message}{content} // '' }
sub img { { type => 'image_url', image_url => { url => $_[0] } } }

# ---- chat parts in: image and document blocks as Strands stores them ----
my $r = chat('c1', [{ role => 'user', content => [
    { type => 'text', text => 'what is this' }, img("data:image/png;base64,$PNG64"),
    { type => 'file', file => { filename => 'notes.txt', file_data => "data:text/plain;base64,$TXT64" } } ] }]);
is $r->{status}, 200, 'chat with an image and a file: 200' or diag $r->{body};
like answer($r), qr/\(Attached: image png of 68 bytes, document txt "notes\.txt" of 18 bytes\.\)/,
    'the echo model says which parts it was given';
my $m = stored('c1', 0);
is_deeply $m->{content}, [
    { text => 'what is this' },
    { image => { format => 'png', source => { bytes => { __bytes_encoded__ => JSON::PP::true, data => $PNG64 } } } },
    { document => { format => 'txt', name => 'notes.txt',
                    source => { bytes => { __bytes_encoded__ => JSON::PP::true, data => $TXT64 } } } },
], 'stored as Strands blocks, bytes base64 with the __bytes_encoded__ marker';

# an image alone is an input; an unpadded base64 is stored as Python writes it
(my $nopad = $PNG64) =~ s/=+$//;
$r = chat('c2', [{ role => 'user', content => [img("data:image/png;base64,$nopad")] }]);
is $r->{status}, 200, 'an image alone is the input' or diag $r->{body};
is stored('c2', 0)->{content}[0]{image}{source}{bytes}{data}, $PNG64, 'base64 stored with its padding';
# an http(s) image is passed on as a URL, never fetched
$r = chat('c3', [{ role => 'user', content => [{ type => 'text', text => 'look' }, img('https://example.invalid/cat.jpg')] }]);
is $r->{status}, 200, 'an https image: 200';
is_deeply stored('c3', 0)->{content}[1],
    { image => { format => 'jpeg', source => { location => { type => 'url', url => 'https://example.invalid/cat.jpg' } } } },
    'kept as a URL location';
like answer($r), qr/image jpeg at https:\/\/example\.invalid\/cat\.jpg/, 'echo names the URL';

# ---- refusals: 413 past limits.max_image_bytes, 422 by name; nothing stored ----
my @bad = (
    [413, 'body_too_large', 'messages[0].content[0].image_url.url', [img("data:image/png;base64,$BIG64")]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.url', [img('data:image/png;base64,@@@@')]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.url', [img('data:image/png;base64,')]], # was stored empty
    [422, 'invalid_field', 'messages[0].content[0].file.file_data',
        [{ type => 'file', file => { filename => 'empty.txt', file_data => 'data:text/plain;base64,' } }]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.url', [img("data:image/bmp;base64,$PNG64")]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.url', [img('ftp://x/y.png')]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.detail',
        [{ type => 'image_url', image_url => { url => "data:image/png;base64,$PNG64", detail => 'low' } }]],
    [422, 'invalid_field', 'messages[0].content[0].image_url.detail', # a number was taken for auto
        [{ type => 'image_url', image_url => { url => "data:image/png;base64,$PNG64", detail => 5 } }]],
    [422, 'invalid_field', 'messages[0].content[0].file.file_id', [{ type => 'file', file => { file_id => 'file-1' } }]],
    [422, 'invalid_field', 'messages[0].content[0].file.file_data',
        [{ type => 'file', file => { filename => 'x.bin', file_data => "data:application/octet-stream;base64,$TXT64" } }]],
    [413, 'body_too_large', 'messages[0].content[0].file.file_data',
        [{ type => 'file', file => { filename => 'big.txt', file_data => "data:text/plain;base64,$BIG64" } }]],
    [422, 'invalid_field', 'messages[0].content[0].type', [{ type => 'input_audio', input_audio => {} }]],
);
for my $b (@bad) {
    my ($status, $code, $param, $content) = @$b;
    $r = chat('bad', [{ role => 'user', content => $content }]);
    is $r->{status}, $status, "$param: $status";
    is $r->{json}{error}{code}, $code, "$param: $code";
    is $r->{json}{error}{param}, $param, "$param named";
}
$r = chat('bad', [{ role => 'assistant', content => [img("data:image/png;base64,$PNG64")] },
                  { role => 'user', content => 'x' }]);
is $r->{status}, 422, 'an image in an assistant message: 422';
ok !-e $s->root . '/session_bad', 'no refused request stored anything';

# ---- the session API: parts, data only on request ----
$r = $s->req(GET => '/api/v1/chat/sessions/c1/messages');
my $parts = $r->{json}{messages}[0]{parts};
is_deeply $parts, [
    { type => 'text', text => 'what is this' },
    { type => 'image', format => 'png', size => 68 },
    { type => 'document', format => 'txt', name => 'notes.txt', size => 18 },
], 'parts: sizes and formats, no data';
$r = $s->req(GET => '/api/v1/chat/sessions/c1/messages?include=bytes');
$parts = $r->{json}{messages}[0]{parts};
is $parts->[1]{url}, "data:image/png;base64,$PNG64", 'include=bytes: the image as a data URL';
is $parts->[2]{url}, "data:text/plain;base64,$TXT64", 'include=bytes: the document as a data URL';
$r = $s->req(GET => '/api/v1/chat/sessions/c1/messages?include=all');
is $r->{status}, 400, 'include=all: 400';
is $r->{json}{error}{param}, 'include', 'include named';
$r = $s->req(GET => '/api/v1/chat/sessions/c1/messages');
ok !exists $r->{json}{messages}[0]{parts}[1]{url}, 'the plain page again: no data (nothing cached with it)';
is_deeply $r->{json}{messages}[0]{openai_messages}[0]{content}[1],
    { type => 'image_url', image_url => { url => "data:image/png;base64,$PNG64" } },
    'the OpenAI projection carries the image_url part';

# ---- Responses input_image / input_file, and conversation items ----
$r = $s->req(POST => '/api/v1/responses', body => { conversation => undef, metadata => { session_id => 'r1' }, input => [
    { role => 'user', content => [
        { type => 'input_text', text => 'see these' },
        { type => 'input_image', image_url => "data:image/png;base64,$PNG64" },
        { type => 'input_file', filename => 'a.pdf', file_data => "data:application/pdf;base64,$PDF64" } ] }] });
is $r->{status}, 200, 'responses with input_image and input_file: 200' or diag $r->{body};
like $r->{json}{output}[0]{content}[0]{text}, qr/Attached: image png of 68 bytes, document pdf "a\.pdf"/,
    'echo saw both';
my $sid = $r->{headers}{'x-session-id'};
$m = stored($sid, 0);
is_deeply [map { (keys %$_)[0] } @{ $m->{content} }], [qw(text image document)], 'stored as blocks';
is $m->{content}[2]{document}{format}, 'pdf', 'pdf by its MIME type';
$r = $s->req(POST => '/api/v1/responses', body => { input => [
    { role => 'user', content => [{ type => 'input_file', file_url => 'https://x/y.pdf' }] }] });
is $r->{status}, 422, 'input_file by URL: 422';
is $r->{json}{error}{param}, 'input[0].content[0].file_url', 'file_url named';
$r = $s->req(POST => '/api/v1/responses', body => { input => [
    { role => 'user', content => [{ type => 'input_image', image_url => "data:image/png;base64,$BIG64" }] }] });
is $r->{status}, 413, 'a large input_image: 413';
$r = $s->req(POST => '/api/v1/conversations', body => {});
my $conv = $r->{json}{id};
$r = $s->req(POST => '/api/v1/responses', body => { conversation => $conv, input => [
    { role => 'user', content => [{ type => 'input_text', text => 'pic' },
                                   { type => 'input_image', image_url => "data:image/png;base64,$PNG64" }] }] });
is $r->{status}, 200, 'a turn in a conversation';
$r = $s->req(GET => "/api/v1/conversations/$conv/items?order=asc");
is_deeply $r->{json}{data}[0]{content}, [
    { type => 'input_text', text => 'pic' },
    { type => 'input_image', image_url => "data:image/png;base64,$PNG64", detail => 'auto' } ],
    'conversation items show the input_image';

# ---- search indexes text only ----
$r = $s->req(GET => '/api/v1/chat/sessions/search?q=what+is+this');
ok scalar @{ $r->{json}{results} // [] } >= 1, 'the text of a message with an image is found';
$r = $s->req(GET => '/api/v1/chat/sessions/search?q=' . substr($TXT64, 0, 12));
is $r->{status}, 200, 'search by a piece of base64: 200';
is scalar @{ $r->{json}{results} // [] }, 0, 'base64 is not searchable';
$r = $s->req(GET => '/api/v1/chat/sessions/search?q=line+two');
is scalar @{ $r->{json}{results} // [] }, 0, 'nor a document\'s contents';
$s->stop;

# ---- an openai provider receives the parts in OpenAI's format ----
my $fake = FakeOpenAI->start;
my $o = SvcTest->start(config => "model:\n  provider: openai\n  name: fake-1\n  base_url: "
                       . $fake->base_url . "\n  api_key: k\n");
$r = $o->req(POST => '/api/v1/chat/completions', body => { session_id => 'o1', messages => [
    { role => 'user', content => [{ type => 'text', text => 'two pictures' },
                                  img("data:image/png;base64,$PNG64"), img('http://example.invalid/a.webp'),
                                  { type => 'file', file => { filename => 'n.txt', file_data => "data:text/plain;base64,$TXT64" } }] }] });
is $r->{status}, 200, 'openai provider: 200' or diag $r->{body};
my ($req) = grep { ref $_->{body}{messages} } @{ $fake->requests };
my $last = $req->{body}{messages}[-1];
is_deeply $last->{content}, [
    { type => 'text', text => 'two pictures' },
    { type => 'image_url', image_url => { url => "data:image/png;base64,$PNG64" } },
    { type => 'image_url', image_url => { url => 'http://example.invalid/a.webp' } },
    { type => 'file', file => { filename => 'n.txt', file_data => "data:text/plain;base64,$TXT64" } },
], 'the model got the image data URL, the URL unchanged and the file';
$o->stop;
$fake->stop;

done_testing;
