/*
 * UCXX's C++ API, RMA through its memory handles, between two processes (a
 * fork): the target maps a buffer (ucxx::MemoryHandle) and hands its
 * serialized remote key over a pipe with its worker address; the origin
 * writes a pattern with memPut, flushes, reads it back with memGet, and the
 * target checks what landed. The target progresses its worker while it
 * waits, as a put or get over shared memory or tcp needs. Built against libucxx's headers and the UCX
 * headers it was built with; run on our libraries (docs/bindings.md).
 * Exit status 0 when the data is right in both directions.
 */
#include <ucxx/api.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static void send_str(int fd, const std::string &s)
{
    uint64_t n = s.size();
    if ((write(fd, &n, sizeof(n)) != sizeof(n)) ||
        (write(fd, s.data(), n) != (ssize_t)n)) {
        perror("write");
    }
}

static std::string recv_str(int fd)
{
    uint64_t n = 0;
    if (read(fd, &n, sizeof(n)) != sizeof(n)) {
        return "";
    }
    std::string s(n, '\0');
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, &s[got], n - got);
        if (r <= 0) {
            return "";
        }
        got += r;
    }
    return s;
}

/* Wait for the peer's next message on the pipe, progressing the worker: a
 * put or get over a transport without RMA of its own (shared memory, tcp)
 * is served by the target's progress, as in upstream. */
static std::string recv_str_progress(int fd, std::shared_ptr<ucxx::Worker> w)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    while (poll(&pfd, 1, 0) == 0) {
        w->progress();
    }
    return recv_str(fd);
}

static void wait_req(std::shared_ptr<ucxx::Worker> w, std::shared_ptr<ucxx::Request> r)
{
    while (!r->isCompleted()) {
        w->progress();
    }
    r->checkError();
}

int main(int argc, char **argv)
{
    const size_t size = (argc > 1) ? strtoull(argv[1], NULL, 0) : (4u << 20);
    int to_origin[2], to_target[2];
    if ((pipe(to_origin) != 0) || (pipe(to_target) != 0)) {
        return 2;
    }
    pid_t pid = fork();
    auto ctx  = ucxx::contextBuilder(UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP).build();
    auto worker = ctx->workerBuilder().build();
    std::string mine(worker->addressBuilder().build()->getStringView());

    if (pid == 0) { /* target */
        auto mh  = ctx->memoryHandleBuilder(size).build();
        auto key = mh->remoteKeyBuilder().build();
        memset((void*)mh->getBaseAddress(), 0, size);
        send_str(to_origin[1], mine);
        send_str(to_origin[1], key->serialize());
        auto peer = ucxx::AddressBuilder(recv_str(to_target[0])).build();
        auto ep   = worker->endpointBuilder(peer).build();
        std::string done = recv_str_progress(to_target[0], worker); /* put flushed */
        const unsigned char *p = (const unsigned char*)mh->getBaseAddress();
        size_t bad = 0;
        for (size_t i = 0; i < size; ++i) {
            bad += (p[i] != (unsigned char)(i * 7 + 3));
        }
        printf("ucxx_rma target: %zu bytes put, %zu wrong\n", size, bad);
        send_str(to_origin[1], bad ? "bad" : "ok");
        recv_str_progress(to_target[0], worker); /* origin finished its get */
        fflush(stdout);
        _exit(bad ? 1 : 0);
    }

    /* origin */
    auto peer = ucxx::AddressBuilder(recv_str(to_origin[0])).build();
    std::string ser = recv_str(to_origin[0]);
    send_str(to_target[1], mine);
    auto ep  = worker->endpointBuilder(peer).build();
    auto key = ep->remoteKeyBuilder(ser).build();
    std::vector<unsigned char> src(size), back(size, 0);
    for (size_t i = 0; i < size; ++i) {
        src[i] = (unsigned char)(i * 7 + 3);
    }
    wait_req(worker, ep->memPutBuilder(src.data(), size, key).build());
    wait_req(worker, ep->flushBuilder().build());
    send_str(to_target[1], "flushed");
    std::string verdict = recv_str_progress(to_origin[0], worker);
    wait_req(worker, ep->memGetBuilder(back.data(), size, key).build());
    size_t bad = 0;
    for (size_t i = 0; i < size; ++i) {
        bad += (back[i] != src[i]);
    }
    send_str(to_target[1], "done");
    int status = 0;
    waitpid(pid, &status, 0);
    printf("ucxx_rma origin: %zu bytes got back, %zu wrong; target says %s\n", size, bad,
           verdict.c_str());
    return (bad == 0 && verdict == "ok" && WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
}
