/*
 * Multi-thread stress of the memory-type cache: lookups racing with updates,
 * removals and resolver write-backs. Every answer is checked to be one that
 * some update produced (no torn descriptions, no region of another slot, no
 * answer older than one this thread already saw).
 */
#include "test_memtype_cache.h"

#include <atomic>
#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ucx_test;

namespace {

/* The stressed address range: SLOTS slots that regions never cross. */
const uintptr_t ZONE   = 0x7d0000000000ul;
const unsigned  SLOTS  = 64;
const size_t    SLOT   = 64 * 1024;
const unsigned  PROBES = 8; /* fixed query starts per slot */

uintptr_t slot_start(unsigned slot)
{
    return ZONE + slot * SLOT;
}

/* Probe points sit off any boundary an update uses (multiples of 64). */
uintptr_t probe_address(unsigned slot, unsigned probe)
{
    return slot_start(slot) + probe * (SLOT / PROBES) + 8 + 40 * probe;
}

uint64_t mix(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = (a * 0x9e3779b97f4a7c15ull) ^ (b + 0x632be59bd9b4e019ull) ^
                 (c << 48);

    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

/*
 * Every field is a function of (slot, version, part), and the version and
 * part are themselves stored (handle_types, alloc_length), so a reader can
 * recompute the whole description from the answer and detect any mix of two
 * descriptions.
 */
ucs_memtype_info_t stress_info(unsigned slot, uint32_t version, unsigned part)
{
    return memtype_info((version & 1) ? UCS_MEMORY_TYPE_CUDA :
                                        UCS_MEMORY_TYPE_CUDA_MANAGED,
                        (int)slot,
                        (ucs_memtype_alloc_kind_t)(1 + version % 7), version,
                        (void*)(uintptr_t)mix(slot, version, part),
                        slot_start(slot), part);
}

/* Collects the first few problems seen by any thread. */
class problem_log {
public:
    void add(const std::string &what)
    {
        std::lock_guard<std::mutex> guard(m_lock);
        if (m_problems.size() < 10) {
            m_problems.push_back(what);
        }
        ++m_count;
    }

    unsigned count() const
    {
        return m_count.load();
    }

    std::string text()
    {
        std::lock_guard<std::mutex> guard(m_lock);
        std::string all;
        for (const auto &p : m_problems) {
            all += p + "\n";
        }
        return all;
    }

private:
    std::mutex               m_lock;
    std::vector<std::string> m_problems;
    std::atomic<unsigned>    m_count{0};
};

class memtype_cache_mt : public memtype_cache_test {
protected:
    /* Runs @a body in @a count threads until the time is up. */
    template<typename F>
    void run_threads(std::vector<std::thread> &threads, unsigned count, F body)
    {
        for (unsigned i = 0; i < count; ++i) {
            threads.emplace_back(body, i);
        }
    }

    void stop_after(std::chrono::milliseconds duration,
                    std::vector<std::thread> &threads)
    {
        std::this_thread::sleep_for(duration);
        m_stop = true;
        for (auto &t : threads) {
            t.join();
        }
    }

    std::atomic<bool> m_stop{false};
    problem_log       m_problems;
};

std::string describe(uintptr_t start, size_t length, ucs_status_t status,
                     const ucs_memtype_info_t &info, const char *why)
{
    std::ostringstream os;

    os << why << ": query [0x" << std::hex << start << ", +0x" << length
       << ") -> " << ucs_status_string(status) << " type " << std::dec
       << info.mem_type << " dev " << info.device << " version "
       << info.handle_types << " part " << info.alloc_length << " region ["
       << info.region_start << ", +0x" << std::hex << info.region_length
       << ")";
    return os.str();
}

} // namespace


/*
 * Two writers own alternate slots and keep replacing, splitting, trimming and
 * removing their regions with ever larger versions; four readers look up
 * fixed probe points. Checks per answer:
 *  - the description is exactly one that a writer stored (not torn);
 *  - its region lies in the probed slot and contains the query start
 *    (the whole query on a hit);
 *  - it is not older than the last write to the probe that had completed
 *    before the lookup began (so no stale remembered hit), and a miss is
 *    only seen when the probe was uncovered at some point of the lookup;
 *  - the version seen at a probe never goes back.
 */
TEST_F(memtype_cache_mt, lookups_racing_updates_see_consistent_answers)
{
    std::vector<std::thread> threads;
    std::atomic<unsigned long> hits{0}, misses{0}, spans{0}, updates{0};
    /* per slot: version of the last write started */
    std::vector<std::atomic<uint32_t>> started(SLOTS);
    /* per probe: (version << 1) | stored, of the last completed write that
     * covered it */
    std::vector<std::atomic<uint32_t>> committed(SLOTS * PROBES);

    for (auto &v : started) {
        v = 0;
    }
    for (auto &v : committed) {
        v = 0;
    }

    run_threads(threads, 2, [&](unsigned writer) {
        std::mt19937 rng(1000 + writer);
        std::vector<uint32_t> version(SLOTS, 0);

        /* one write: publish its start, do it, then publish what it did */
        auto write = [&](unsigned slot, uint32_t v, uintptr_t start,
                         size_t length, unsigned part, bool store) {
            ucs_status_t status;

            status = store ? update(start, length, stress_info(slot, v, part)) :
                             ucs_memtype_cache_remove(m_cache, (void*)start,
                                                      length);
            if (status != UCS_OK) {
                m_problems.add(std::string("update failed: ") +
                               ucs_status_string(status));
            }
            for (unsigned probe = 0; probe < PROBES; ++probe) {
                uintptr_t address = probe_address(slot, probe);
                if ((address >= start) && (address < start + length)) {
                    committed[slot * PROBES + probe] = (v << 1) | store;
                }
            }
        };

        while (!m_stop) {
            unsigned slot   = 2 * (rng() % (SLOTS / 2)) + writer;
            uint32_t v      = ++version[slot];
            uintptr_t start = slot_start(slot);
            uintptr_t a     = start + 64 * (rng() % (SLOT / 64));
            uintptr_t b     = start + 64 * (rng() % (SLOT / 64));

            if (a > b) {
                std::swap(a, b);
            }
            if (a == b) {
                b += 64;
            }

            started[slot] = v;
            switch (rng() % 5) {
            case 0:
                write(slot, v, start, SLOT, 0, false);
                break;
            case 1:
                write(slot, v, start, SLOT, 0, true);
                break;
            case 2:
                write(slot, v, start, SLOT / 2, 1, true);
                write(slot, v, start + SLOT / 2, SLOT / 2, 2, true);
                break;
            case 3:
                write(slot, v, a, b - a, 3, true);
                break;
            default:
                write(slot, v, a, b - a, 0, false);
                break;
            }
            ++updates;
        }
    });

    run_threads(threads, 4, [&](unsigned reader) {
        std::mt19937 rng(2000 + reader);
        std::vector<uint32_t> last_seen(SLOTS * PROBES, 0);
        unsigned slot = 0, probe = 0;
        size_t length = 1;

        while (!m_stop) {
            ucs_memtype_info_t info;

            /* often repeat the previous query: the remembered-hit path */
            if (rng() % 3 != 0) {
                slot   = rng() % SLOTS;
                probe  = rng() % PROBES;
                length = 1 + rng() % 4096;
            }

            uintptr_t start     = probe_address(slot, probe);
            uint32_t before     = committed[slot * PROBES + probe];
            ucs_status_t status = lookup(start, length, &info);
            uint32_t last_start = started[slot];
            uintptr_t rstart    = (uintptr_t)info.region_start;
            uintptr_t rend      = rstart + info.region_length;
            uint32_t &seen      = last_seen[slot * PROBES + probe];

            if (status == UCS_ERR_NO_ELEM) {
                if (info.mem_type != UCS_MEMORY_TYPE_UNKNOWN) {
                    m_problems.add(describe(start, length, status, info,
                                            "miss with a type"));
                } else if ((before & 1) && ((before >> 1) == last_start)) {
                    /* stored before we began, nothing written since */
                    m_problems.add(describe(start, length, status, info,
                                            "miss of a stored region"));
                }
                ++misses;
                continue;
            }

            if ((status != UCS_OK) && (status != UCS_MEMTYPE_CACHE_ERR_SPANS)) {
                m_problems.add(describe(start, length, status, info,
                                        "unexpected status"));
                continue;
            }

            if (!same_description(stress_info(slot, info.handle_types,
                                              (unsigned)info.alloc_length),
                                  info) ||
                (info.alloc_length > 3)) {
                m_problems.add(describe(start, length, status, info,
                                        "torn or foreign description"));
            } else if ((rstart < slot_start(slot)) ||
                       (rend > slot_start(slot) + SLOT) || (start < rstart) ||
                       (start >= rend) ||
                       ((status == UCS_OK) && (start + length > rend))) {
                m_problems.add(describe(start, length, status, info,
                                        "region does not fit the query"));
            } else if (info.handle_types < (before >> 1)) {
                m_problems.add(describe(start, length, status, info,
                                        "older than a completed write"));
            } else if (info.handle_types < seen) {
                m_problems.add(describe(start, length, status, info,
                                        "went back in time"));
            } else {
                seen = info.handle_types;
            }
            ++((status == UCS_OK) ? hits : spans);
        }
    });

    stop_after(std::chrono::milliseconds(1200), threads);

    EXPECT_EQ(0u, m_problems.count()) << m_problems.text();
    EXPECT_GT(hits.load(), 1000ul);
    EXPECT_GT(misses.load(), 100ul);
    EXPECT_GT(spans.load(), 10ul);
    EXPECT_GT(updates.load(), 1000ul);
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));
    RecordProperty("hits", std::to_string(hits.load()));
    RecordProperty("updates", std::to_string(updates.load()));
}

/*
 * Misses answered by the resolver race with "events" that replace, trim and
 * remove the same allocations. Both sources describe allocation i with
 * device i; they differ in pool and kind, and either is a right answer. No
 * lookup may miss (the resolver always knows), and once the events stop,
 * every allocation is cached again after one resolver call at most.
 */
TEST_F(memtype_cache_mt, resolver_write_backs_racing_events_stay_consistent)
{
    const unsigned allocs = 32;
    fake_resolver resolver;
    std::vector<std::thread> threads;
    std::atomic<unsigned long> lookups{0};

    auto from_driver = [](unsigned i) {
        return memtype_info(UCS_MEMORY_TYPE_CUDA, (int)i,
                            UCS_MEMTYPE_ALLOC_LEGACY,
                            UCS_MEMTYPE_HANDLE_LEGACY_IPC,
                            (void*)(uintptr_t)mix(i, 0, 9), slot_start(i),
                            SLOT / 2);
    };
    auto from_event = [](unsigned i) {
        return memtype_info(UCS_MEMORY_TYPE_CUDA, (int)i,
                            UCS_MEMTYPE_ALLOC_POOL, UCS_MEMTYPE_HANDLE_POSIX_FD,
                            (void*)(uintptr_t)mix(i, 1, 9), slot_start(i),
                            SLOT / 2);
    };

    for (unsigned i = 0; i < allocs; ++i) {
        resolver.add(slot_start(i), SLOT / 2, from_driver(i));
    }
    resolver.attach(m_cache);

    run_threads(threads, 1, [&](unsigned) {
        std::mt19937 rng(3000);

        while (!m_stop) {
            unsigned i      = rng() % allocs;
            uintptr_t start = slot_start(i);
            uintptr_t part  = start + 64 * (rng() % (SLOT / 2 / 64 - 1));

            switch (rng() % 3) {
            case 0:
                ucs_memtype_cache_remove(m_cache, (void*)start, SLOT / 2);
                break;
            case 1:
                update(start, SLOT / 2, from_event(i));
                break;
            default:
                ucs_memtype_cache_remove(m_cache, (void*)part, 64);
                break;
            }
            std::this_thread::yield();
        }
    });

    run_threads(threads, 4, [&](unsigned reader) {
        std::mt19937 rng(4000 + reader);

        while (!m_stop) {
            ucs_memtype_info_t info;
            unsigned i          = rng() % allocs;
            uintptr_t start     = slot_start(i) + rng() % (SLOT / 2 - 64);
            size_t length       = 1 + rng() % 64;
            ucs_status_t status = lookup(start, length, &info);
            uintptr_t rstart    = (uintptr_t)info.region_start;
            uintptr_t rend      = rstart + info.region_length;

            ++lookups;
            if ((status != UCS_OK) && (status != UCS_MEMTYPE_CACHE_ERR_SPANS)) {
                m_problems.add(describe(start, length, status, info,
                                        "the resolver knows every address"));
            } else if (!same_description(from_driver(i), info) &&
                       !same_description(from_event(i), info)) {
                m_problems.add(describe(start, length, status, info,
                                        "description of no source"));
            } else if ((rstart < slot_start(i)) ||
                       (rend > slot_start(i) + SLOT / 2) || (start < rstart) ||
                       (start >= rend) ||
                       ((status == UCS_OK) && (start + length > rend))) {
                m_problems.add(describe(start, length, status, info,
                                        "region does not fit the query"));
            }
        }
    });

    stop_after(std::chrono::milliseconds(600), threads);

    EXPECT_EQ(0u, m_problems.count()) << m_problems.text();
    EXPECT_GT(lookups.load(), 1000ul);
    EXPECT_LT(resolver.calls(), lookups.load()) << "answers were cached";
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));

    /* quiet now: one pass may resolve, a second pass must not */
    for (unsigned pass = 0; pass < 2; ++pass) {
        unsigned calls = resolver.calls();
        for (unsigned i = 0; i < allocs; ++i) {
            ucs_memtype_info_t info;
            for (size_t off = 0; off < SLOT / 2; off += 4096) {
                EXPECT_EQ(UCS_OK, lookup(slot_start(i) + off, 1, &info));
                EXPECT_EQ((int)i, info.device);
            }
        }
        if (pass == 1) {
            EXPECT_EQ(calls, resolver.calls());
        }
    }
}


/*
 * Threads that own one slot each keep storing a region, parking its removal
 * as an unmap event from inside free() would (remove_deferred), and looking
 * it up, while other threads update and look up their own slots. After its
 * removal returned, a thread must never find its region again (a removal
 * parked by any thread is applied before any lookup answers from it), and
 * the maps must stay valid and identical.
 */
TEST_F(memtype_cache_mt, deferred_removals_racing_updates_and_lookups)
{
    std::vector<std::thread> threads;

    run_threads(threads, 6, [this](unsigned id) {
        const unsigned slot = id;
        ucs_memtype_info_t info;
        uint32_t version    = 0;
        ucs_status_t status;

        while (!m_stop) {
            ucs_memtype_info_t mine = stress_info(slot, ++version, 0);
            if (ucs_memtype_cache_update(m_cache, (void*)slot_start(slot),
                                         SLOT, &mine) != UCS_OK) {
                m_problems.add("update failed");
                continue;
            }
            status = ucs_memtype_cache_lookup(m_cache,
                                              (void*)probe_address(slot, 1), 8,
                                              &info);
            if ((status != UCS_OK) || !same_description(mine, info)) {
                m_problems.add(describe(probe_address(slot, 1), 8, status,
                                        info, "own region not found"));
            }

            /* odd threads remove from the middle, even ones everything */
            if (id & 1) {
                ucs_memtype_cache_remove_deferred(
                        m_cache, (void*)(slot_start(slot) + SLOT / 4), SLOT / 2);
            } else {
                ucs_memtype_cache_remove_deferred(m_cache,
                                                  (void*)slot_start(slot), SLOT);
            }
            status = ucs_memtype_cache_lookup(m_cache,
                                              (void*)probe_address(slot, 4), 8,
                                              &info);
            if (status != UCS_ERR_NO_ELEM) {
                m_problems.add(describe(probe_address(slot, 4), 8, status,
                                        info, "found after its removal"));
            }
        }
    });
    stop_after(std::chrono::milliseconds(1500), threads);

    EXPECT_EQ(0u, m_problems.count()) << m_problems.text();
    EXPECT_EQ(UCS_OK, ucs_memtype_cache_check(m_cache));
}
