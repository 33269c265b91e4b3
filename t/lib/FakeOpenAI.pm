package FakeOpenAI;
# A local HTTP/1.1 server that speaks the OpenAI chat-completions wire format, for the tests
# of the `openai` model provider. Core modules only. It runs in a forked child (its own
# process group) on 127.0.0.1 and a free port, and forks once per connection, so a slow
# answer does not hold up other requests.
#
#   my $fake = FakeOpenAI->start(%opts);   # opts: log => path (default: a temp file)
#   $fake->base_url;                       # "http://127.0.0.1:PORT/v1"
#   $fake->requests;                       # [{method, path, headers => {lc name => value}, body => decoded JSON}, ...]
#   $fake->request_for($text);             # the body of the request whose last message is $text
#   $fake->stop;
#
# What it answers, from the last user message (after a trailing tool message it answers
# "Tool <name> said: <content>" instead):
#   "fail 500" / "fail 429" (Retry-After: 1) / "fail 401" (echoes the bearer key in the
#   message, as some servers do) / "fail NNN": that status with an OpenAI error object.
#   "fail NNN once": that error only for the first request carrying this message.
#   "slow N ...": N seconds (fractions allowed) before the first byte, then a normal answer.
#   "call tool NAME [JSON]": a streamed tool call (id, name, arguments in small pieces).
#   "loop tool NAME [JSON]": that tool call again after every tool result (a looping model).
#   a prompt matching a rule of start(rules => [{prompt => qr/.../, tool => NAME,
#   arguments => JSON}]) when the request offers tool NAME: that tool call (a model that
#   decides to use a tool from a plain prompt).
#   "nousage ...": no usage chunk.   "nostream ...": a plain chat.completion JSON answer.
#   "garbage ...": a mid-stream {"error": ...} event after one content word.
#   anything else: "You said: <text> (<n> messages)" streamed word by word.
# Requests with "stream": false get a plain JSON answer too.
use strict;
use warnings;
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();
use Fcntl qw(:flock);
use File::Temp ();

my $J = JSON::PP->new->utf8->canonical->allow_nonref;

sub start {
    my ($class, %opts) = @_;
    my $logfh;
    my $log = $opts{log};
    unless ($log) {
        ($logfh, $log) = File::Temp::tempfile('fakeopenai-XXXXXX', TMPDIR => 1, UNLINK => 1);
        close $logfh;
    }
    open my $t, '>', $log or die "$log: $!";
    close $t;
    my $srv = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1', LocalPort => 0, Proto => 'tcp', Listen => 64, ReuseAddr => 1,
    ) or die "FakeOpenAI: listen: $!";
    my $port = $srv->sockport;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        POSIX::setpgid(0, 0);
        $SIG{CHLD} = 'IGNORE';
        $SIG{PIPE} = 'IGNORE';
        $SIG{TERM} = sub { POSIX::_exit(0) };
        while (1) {
            my $c = $srv->accept or next;
            my $k = fork;
            if (defined $k && $k == 0) {
                close $srv;
                srand();
                eval { _serve($c, $log, $opts{rules}) };
                POSIX::_exit(0);
            }
            close $c;
        }
    }
    close $srv;
    return bless { pid => $pid, port => $port, log => $log }, $class;
}

sub port     { $_[0]{port} }
sub base_url { "http://127.0.0.1:$_[0]{port}/v1" }
sub log_path { $_[0]{log} }

sub requests {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or return [];
    my @r;
    while (my $l = <$fh>) {
        chomp $l;
        next unless length $l;
        push @r, $J->decode($l);
    }
    return \@r;
}

# The body of the recorded request whose last message has content $text, waiting up to
# $secs (default 10) for it; {} when none came.
sub request_for {
    my ($self, $text, $secs) = @_;
    my $deadline = time + ($secs // 10);
    while (1) {
        my ($found) = grep { ref $_->{body} eq 'HASH' && ($_->{body}{messages}[-1]{content} // '') eq $text }
            @{ $self->requests };
        return $found->{body} if $found;
        return {} if time > $deadline;
        select(undef, undef, undef, 0.05);
    }
}

sub clear {
    my ($self) = @_;
    open my $fh, '>', $self->{log} or die "$self->{log}: $!";
    close $fh;
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid};
    kill 'TERM', -$self->{pid};
    kill 'TERM', $self->{pid};
    waitpid($self->{pid}, 0);
    delete $self->{pid};
}

sub DESTROY { $_[0]->stop }

# ---- the child ----

sub _read_request {
    my ($c) = @_;
    my $buf = '';
    while ($buf !~ /\r?\n\r?\n/) {
        my $n = sysread($c, $buf, 65536, length $buf);
        return undef unless $n;
    }
    my ($head, $rest) = split /\r?\n\r?\n/, $buf, 2;
    my @lines = split /\r?\n/, $head;
    my ($method, $path) = split / /, shift @lines;
    my %h;
    for (@lines) { $h{lc $1} = $2 if /^([^:]+):\s*(.*?)\s*$/ }
    my $body = $rest // '';
    if (defined $h{'content-length'}) {
        while (length $body < $h{'content-length'}) {
            my $n = sysread($c, $body, 65536, length $body);
            last unless $n;
        }
    } elsif (($h{'transfer-encoding'} // '') =~ /chunked/i) {
        my $raw = $body;
        $body = '';
        while (1) {
            if ($raw =~ /\A([0-9a-fA-F]+)[^\r\n]*\r\n/) {
                my $len = hex $1;
                my $hl = length $&;
                if ($len == 0) { last }
                if (length $raw >= $hl + $len + 2) {
                    $body .= substr($raw, $hl, $len);
                    $raw = substr($raw, $hl + $len + 2);
                    next;
                }
            }
            my $n = sysread($c, $raw, 65536, length $raw);
            last unless $n;
        }
    }
    return { method => $method, path => $path, headers => \%h, body => $body };
}

sub _record {
    my ($log, $rec) = @_;
    open my $fh, '>>', $log or return;
    flock($fh, LOCK_EX);
    syswrite($fh, $J->encode($rec) . "\n");
    close $fh;
}

sub _count_same {
    my ($log, $text) = @_;
    open my $fh, '<', $log or return 0;
    flock($fh, LOCK_SH);
    my $n = 0;
    while (my $l = <$fh>) {
        my $r = eval { $J->decode($l) } or next;
        my $lu = _last_user($r->{body});
        $n++ if defined $lu && $lu eq $text;
    }
    return $n;
}

sub _content_text {
    my ($c) = @_;
    return $c unless ref $c;
    return join '', map { ref $_ && ($_->{type} // '') eq 'text' ? $_->{text} : '' } @$c
      if ref $c eq 'ARRAY';
    return '';
}

sub _last_user {
    my ($body) = @_;
    return undef unless ref $body eq 'HASH' && ref $body->{messages} eq 'ARRAY';
    for my $m (reverse @{ $body->{messages} }) {
        return _content_text($m->{content} // '') if ($m->{role} // '') eq 'user';
    }
    return undef;
}

sub _send {
    my ($c, $data) = @_;
    my $off = 0;
    while ($off < length $data) {
        my $n = syswrite($c, $data, length($data) - $off, $off);
        die "write: $!" unless defined $n;
        $off += $n;
    }
}

sub _respond_json {
    my ($c, $status, $obj, %extra) = @_;
    my $body = $J->encode($obj);
    my $reason = { 200 => 'OK', 400 => 'Bad Request', 401 => 'Unauthorized', 404 => 'Not Found',
        429 => 'Too Many Requests', 500 => 'Internal Server Error', 503 => 'Service Unavailable' }
      ->{$status} // 'Status';
    my $h = "HTTP/1.1 $status $reason\r\nContent-Type: application/json\r\n"
      . "Content-Length: " . length($body) . "\r\nConnection: close\r\n";
    $h .= "$_: $extra{$_}\r\n" for sort keys %extra;
    _send($c, "$h\r\n$body");
}

sub _error {
    my ($c, $status, $msg, $type, $code, %extra) = @_;
    _respond_json($c, $status,
        { error => { message => $msg, type => $type, param => undef, code => $code } }, %extra);
}

sub _sse_start {
    my ($c) = @_;
    _send($c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        . "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

sub _chunk {
    my ($c, $data) = @_;
    _send($c, sprintf("%x\r\n%s\r\n", length $data, $data));
}

sub _event {
    my ($c, $obj) = @_;
    _chunk($c, 'data: ' . (ref $obj ? $J->encode($obj) : $obj) . "\n\n");
}

sub _serve {
    my ($c, $log, $rules) = @_;
    binmode $c;
    my $req = _read_request($c) or return;
    my $body = eval { $J->decode($req->{body}) };
    _record($log, { method => $req->{method}, path => $req->{path}, headers => $req->{headers},
        body => $body // $req->{body} });
    if ($req->{method} ne 'POST' || $req->{path} !~ m{/chat/completions$}) {
        return _error($c, 404, "Unknown path $req->{path}", 'invalid_request_error', 'not_found');
    }
    if (ref $body ne 'HASH') {
        return _error($c, 400, 'We could not parse the JSON body of your request.',
            'invalid_request_error', undef);
    }
    my $msgs = $body->{messages} // [];
    my $last = $msgs->[-1] // {};
    my $text = _last_user($body) // '';
    my $model = $body->{model} // 'fake';
    my $id = 'chatcmpl-fake' . int(rand(1e9));
    my $created = time;

    if ($text =~ /^fail (\d{3})( once)?/ && ($last->{role} // '') ne 'tool') {
        my ($status, $once) = ($1, $2);
        if (!$once || _count_same($log, $text) <= 1) {
            if ($status == 401) {
                my ($key) = ($req->{headers}{authorization} // '') =~ /^Bearer (.*)$/;
                return _error($c, 401, 'Incorrect API key provided: ' . ($key // '') . '.',
                    'invalid_request_error', 'invalid_api_key');
            }
            if ($status == 429) {
                return _error($c, 429, 'Rate limit reached for fake-1. Please try again in 1s.',
                    'requests', 'rate_limit_exceeded', 'Retry-After' => 1);
            }
            return _error($c, $status, "The server had an error while processing your request ($status).",
                'server_error', undef);
        }
    }
    if ($text =~ /^slow (\d+(?:\.\d+)?)/ && ($last->{role} // '') ne 'tool') {
        select(undef, undef, undef, $1);
    }

    my ($answer, @tool_calls);
    my %offered = map { ($_->{function}{name} // '') => 1 } @{ $body->{tools} // [] };
    my ($rule) = grep { $text =~ $_->{prompt} && $offered{ $_->{tool} } } @{ $rules // [] };
    if ($rule && ($last->{role} // '') ne 'tool') {
        @tool_calls = ({ id => 'call_' . int(rand(1e9)), name => $rule->{tool},
                         arguments => $rule->{arguments} // '{}' });
    } elsif ($text =~ /^loop tool (\S+)\s*(.*)$/s) {
        # a model that never stops calling tools, even after their results
        my ($name, $args) = ($1, $2);
        $args = '{}' unless length $args;
        @tool_calls = ({ id => 'call_' . int(rand(1e9)), name => $name, arguments => $args });
    } elsif (($last->{role} // '') eq 'tool') {
        my %names;
        for my $m (@$msgs) {
            for my $tc (@{ $m->{tool_calls} // [] }) { $names{ $tc->{id} } = $tc->{function}{name} }
        }
        my $name = $names{ $last->{tool_call_id} // '' } // 'unknown';
        $answer = "Tool $name said: " . _content_text($last->{content} // '');
    } elsif ($text =~ /^call tool (\S+)\s*(.*)$/s) {
        my ($name, $args) = ($1, $2);
        $args = '{}' unless length $args;
        @tool_calls = ({ id => 'call_' . int(rand(1e9)), name => $name, arguments => $args });
    } else {
        my $n = scalar @$msgs;
        $answer = "You said: $text ($n messages)";
    }
    my $usage = { prompt_tokens => 11, completion_tokens => 7, total_tokens => 18 };

    if ((defined $body->{stream} && !$body->{stream}) || $text =~ /^nostream/) {
        my $msg = { role => 'assistant', content => $answer };
        if (@tool_calls) {
            $msg->{content} = undef;
            $msg->{tool_calls} = [ map { { id => $_->{id}, type => 'function',
                function => { name => $_->{name}, arguments => $_->{arguments} } } } @tool_calls ];
        }
        return _respond_json($c, 200, { id => $id, object => 'chat.completion', created => $created,
            model => $model, choices => [ { index => 0, message => $msg,
            finish_reason => @tool_calls ? 'tool_calls' : 'stop' } ], usage => $usage });
    }

    _sse_start($c);
    my $base = { id => $id, object => 'chat.completion.chunk', created => $created, model => $model };
    my $ch = sub {
        my ($delta, $finish) = @_;
        _event($c, { %$base, choices => [ { index => 0, delta => $delta, finish_reason => $finish } ] });
    };
    $ch->({ role => 'assistant', content => '' }, undef);
    if (@tool_calls) {
        my $i = 0;
        for my $tc (@tool_calls) {
            $ch->({ tool_calls => [ { index => $i, id => $tc->{id}, type => 'function',
                function => { name => $tc->{name}, arguments => '' } } ] }, undef);
            my $a = $tc->{arguments};
            while (length $a) {
                my $piece = substr($a, 0, 3, '');
                $ch->({ tool_calls => [ { index => $i, function => { arguments => $piece } } ] }, undef);
            }
            $i++;
        }
        $ch->({}, 'tool_calls');
    } else {
        my @words = $answer =~ /(\S+\s*)/g;
        for my $w (@words) {
            $ch->({ content => $w }, undef);
            if ($text =~ /^garbage/) {
                _event($c, { error => { message => 'The model overloaded mid-stream.', type => 'server_error' } });
                _chunk($c, '');
                return;
            }
            select(undef, undef, undef, 0.01);
        }
        $ch->({}, 'stop');
    }
    if ($text !~ /^nousage/ && ($body->{stream_options}{include_usage} // 0)) {
        _event($c, { %$base, choices => [], usage => $usage });
    }
    _event($c, '[DONE]');
    _chunk($c, '');
}

1;
