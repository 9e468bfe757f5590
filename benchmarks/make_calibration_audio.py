"""Synthesize the encoder's calibration speech (tokenmap/encoders/calibration/*.flac) with flite and espeak-ng.

Shows: which audio the full-int8 encoder learns its activation ranges from. The text below was written for
this purpose and is in no corpus the project builds maps from, and the voices and settings differ from the
benchmark sets' TTS (make bench-data), so the encoder never calibrates on audio it is measured on. Needs
Debian's flite, espeak-ng and sox; run once, then commit the FLAC files:

    python benchmarks/make_calibration_audio.py tokenmap/encoders/calibration
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

#: (engine, voice, rate words/min or flite stretch, pitch, text)
CLIPS = [
    ("flite", "slt", 1.0, None, "Good morning. Please remind me to water the tomatoes after lunch, and move the "
                                "dentist appointment to Thursday at half past nine."),
    ("flite", "rms", 0.9, None, "The quarterly figures came in lower than expected, so the board asked for a new "
                                "forecast by the end of the month."),
    ("flite", "awb", 1.1, None, "Turn left at the second roundabout, then keep right until you reach the old "
                                "railway bridge."),
    ("flite", "kal16", 1.0, None, "Seven, four, one, nine, zero, three. Account balance: two hundred and twelve "
                                  "dollars and fifty cents."),
    ("espeak", "en-us", 165, 40, "Hello, I am calling about the parcel that was supposed to arrive yesterday. "
                                 "Could you check where it is?"),
    ("espeak", "en-gb", 140, 60, "Dictation: the patient reports mild pain in the left knee, worse when climbing "
                                 "stairs, no swelling observed."),
    ("espeak", "es", 150, 50, "Buenas tardes. Quisiera reservar una mesa para cuatro personas el sábado por la "
                              "noche, si es posible junto a la ventana."),
    ("espeak", "fr", 150, 45, "Bonjour, je voudrais changer le mot de passe de mon compte, car je ne me souviens "
                              "plus de l'ancien."),
    ("espeak", "it", 155, 55, "Per favore, spegni le luci del soggiorno e abbassa il riscaldamento di due gradi "
                              "prima di mezzanotte."),
    ("espeak", "de", 145, 45, "Der Zug nach Hamburg hat heute leider zwanzig Minuten Verspätung, bitte achten "
                              "Sie auf die Durchsagen."),
    ("espeak", "ru", 145, 50, "Добрый день. Пожалуйста, соедините меня с бухгалтерией, у меня вопрос по счёту."),
    ("espeak", "nl", 150, 50, "Kun je morgen de vergadering verplaatsen naar drie uur, en de notulen naar "
                              "iedereen sturen?"),
    ("espeak", "cs", 145, 50, "Zítra ráno bude pršet, takže si vezmi deštník a teplou bundu."),
    ("espeak", "ro", 150, 50, "Te rog să deschizi fereastra și să pornești ventilatorul din bucătărie."),
    ("espeak", "pt", 155, 50, "Amanhã vamos visitar o museu de arte moderna e depois almoçar perto do rio."),
    ("espeak", "pl", 145, 50, "Proszę wysłać fakturę na adres firmy do końca tygodnia."),
]


def synthesize(engine: str, voice: str, rate, pitch, text: str, wav: Path) -> None:
    if engine == "flite":
        subprocess.run(["flite", "-voice", voice, "--setf", f"duration_stretch={rate}", "-t", text, "-o", str(wav)],
                       check=True)
    else:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(wav), text],
                       check=True)


def main(out: str) -> None:
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (engine, voice, rate, pitch, text) in enumerate(CLIPS):
            wav = Path(tmp) / f"{i}.wav"
            synthesize(engine, voice, rate, pitch, text, wav)
            flac = target / f"{i:02d}-{engine}-{voice}.flac"
            subprocess.run(["sox", str(wav), "-r", "16000", "-c", "1", "-b", "16", str(flac)], check=True)
            print(flac, flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tokenmap/encoders/calibration")
