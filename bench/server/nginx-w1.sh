# Sourced by bench/server/run.sh and bench/profile.sh: the nginx they both
# run beside cshttpd on W1 (one worker, `return 200 "Hello, World!"` at
# /demo/plaintext, no access log).
#   nginx_w1_conf DIR PORT   writes DIR/nginx.conf (and DIR/logs)
nginx_w1_conf() {
  local dir=$1 port=$2
  mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    location = /demo/plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
}
NGX
}
