#!/usr/bin/python3
"""Reference DNS decoder for ScreenTimeCore's differential test, using dnspython (Debian's
python3-dnspython).

  dns-reference.py corpus   prints a corpus of real-shaped queries and answers made by dnspython,
                            one JSON object per line: the wire bytes (hex) and dnspython's reading
  dns-reference.py decode   reads wire messages (hex, one per line) on stdin and prints
                            dnspython's reading of each, or {"error": ...}

Names are compared as lists of labels in hex, so escaping rules never get in the way.
"""
import json
import random
import sys

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset


def labels(name):
    return [label.hex() for label in name.labels if label != b""]


def reading(wire):
    message = dns.message.from_wire(wire)
    def records(section):
        out = []
        for rrset in section:
            for rdata in rrset:
                out.append([labels(rrset.name), int(rrset.rdtype), int(rrset.rdclass), rrset.ttl])
        return out
    return {
        "id": message.id,
        "flags": message.flags | (message.opcode() << 11 & 0x7800) | (message.rcode() & 0xF),
        "questions": [[labels(q.name), int(q.rdtype), int(q.rdclass)] for q in message.question],
        "answers": records(message.answer),
        "authorities": records(message.authority),
        "additionals": records(message.additional),
        "edns": None if message.edns < 0 else {"payload": message.payload, "version": message.edns,
                                               "dnssecOK": bool(message.ednsflags & dns.flags.DO)},
    }


def corpus():
    rng = random.Random(1035)
    names = ["example.com", "www.example.com", "a.b.c.example.co.uk", "xn--bcher-kva.de", "youtube.com",
             "use-application-dns.net", "_dmarc.example.org", "x" * 63 + ".example", "MiXeD.CaSe.Example.NET"]
    types = ["A", "AAAA", "MX", "TXT", "CNAME", "NS", "SOA", "HTTPS", "PTR", "SRV"]
    for index in range(300):
        name = rng.choice(names) + "."
        rdtype = rng.choice(types)
        query = dns.message.make_query(name, rdtype, use_edns=rng.choice([None, 0]),
                                       payload=rng.choice([512, 1232, 4096]), want_dnssec=rng.random() < 0.3)
        query.id = rng.randrange(65536)
        wire = query.to_wire()
        print(json.dumps({"wire": wire.hex(), "reading": reading(wire)}))
        response = dns.message.make_response(query)
        if rng.random() < 0.3:
            response.set_rcode(dns.rcode.NXDOMAIN)
        else:
            rrset = dns.rrset.from_text(name, 300, "IN", "A", "192.0.2.%d" % rng.randrange(1, 255),
                                        "192.0.2.%d" % rng.randrange(1, 255))
            response.answer.append(rrset)
            response.answer.append(dns.rrset.from_text("alias." + name, 60, "IN", "CNAME", name))
            response.authority.append(dns.rrset.from_text(name, 3600, "IN", "NS", "ns1." + name))
            response.additional.append(dns.rrset.from_text("ns1." + name, 3600, "IN", "A", "198.51.100.1"))
        wire = response.to_wire()
        print(json.dumps({"wire": wire.hex(), "reading": reading(wire)}))


def decode():
    for line in sys.stdin:
        line = line.strip()
        try:
            print(json.dumps(reading(bytes.fromhex(line))))
        except Exception as error:  # a reference decoder's refusal is data for the test
            print(json.dumps({"error": type(error).__name__}))


if __name__ == "__main__":
    {"corpus": corpus, "decode": decode}[sys.argv[1]]()
