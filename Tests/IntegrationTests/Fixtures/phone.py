#!/usr/bin/env python3
"""A guardian's phone, for WebIntegrationTests: Debian's Chromium, headless, in a phone-sized
window, driven through chromedriver. It trusts the dashboard's certificate by its key alone
(--ignore-certificate-errors-spki-list with the key's hash), signs in, opens the child's page,
signs in (with a password, or a pairing code given as "code:XXXXXXXX", opened as the link
`screentime web pair` prints), has the child ask (the command given), waits for the ask to appear by itself (the page's event
stream), grants 15 minutes, then locks the child. It says each step on a line, and saves a
screenshot of each page.

  phone.py URL USER PASSWORD CHILD SPKI SHOTS -- ASK-COMMAND...
"""
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

url, user, password, child, spki, shots = sys.argv[1:7]
ask = sys.argv[sys.argv.index("--") + 1:]

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=390,844",
                 f"--ignore-certificate-errors-spki-list={spki}", f"--user-data-dir={tempfile.mkdtemp()}",
                 "--force-device-scale-factor=1"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(driver, 15)


def say(step):
    print(step, flush=True)


try:
    if password.startswith("code:"):
        # The link `screentime web pair` prints: the code is filled in, the guardian taps Pair.
        driver.get(url + "signin?code=" + password[5:])
        driver.save_screenshot(f"{shots}/1-pair.png")
        driver.find_element(By.XPATH, "//button[text()='Pair this phone']").click()
    else:
        driver.get(url + "signin")
        driver.save_screenshot(f"{shots}/1-sign-in.png")
        driver.find_element(By.ID, "user").send_keys(user)
        driver.find_element(By.ID, "password").send_keys(password)
        driver.find_element(By.XPATH, "//button[text()='Sign in']").click()
    wait.until(expected_conditions.presence_of_element_located((By.LINK_TEXT, child)))
    say("signed in")
    driver.save_screenshot(f"{shots}/2-family.png")
    driver.find_element(By.LINK_TEXT, child).click()
    wait.until(expected_conditions.presence_of_element_located((By.XPATH, "//button[text()='Lock now']")))
    say("child's page")
    subprocess.run(ask, check=True, capture_output=True)
    asked = time.monotonic()
    # Nothing is clicked: the page's event stream reloads it when the ask comes.
    wait.until(expected_conditions.presence_of_element_located((By.XPATH, "//button[text()='Grant 15 min']")))
    say(f"ask shown after {time.monotonic() - asked:.1f} s")
    driver.save_screenshot(f"{shots}/3-ask.png")
    driver.find_element(By.XPATH, "//button[text()='Grant 15 min']").click()
    wait.until(expected_conditions.invisibility_of_element_located((By.XPATH, "//button[text()='Grant 15 min']")))
    say("granted")
    driver.find_element(By.XPATH, "//button[text()='Lock now']").click()
    wait.until(expected_conditions.presence_of_element_located((By.XPATH, "//p[starts-with(text(), 'Locked')]")))
    say("locked")
    driver.save_screenshot(f"{shots}/4-locked.png")
    # The rules: a day's screen time set from the phone.
    driver.find_element(By.PARTIAL_LINK_TEXT, "Rules").click()
    field = wait.until(expected_conditions.presence_of_element_located((By.ID, "screen-daily")))
    field.send_keys("2h")
    field.find_element(By.XPATH, "./following::button[text()='Set'][1]").click()
    wait.until(expected_conditions.presence_of_element_located(
        (By.XPATH, "//li[starts-with(text(), 'screen time, today')]")))
    say("limit set")
    driver.save_screenshot(f"{shots}/5-rules.png")
    driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.ID, "down-from"))
    driver.save_screenshot(f"{shots}/6-rules-downtime.png")
except Exception:
    # What the phone showed when a step did not come, for the test's message.
    driver.save_screenshot(f"{shots}/failed.png")
    print("page when it failed:", driver.current_url, driver.find_element(By.TAG_NAME, "body").text[:600],
          file=sys.stderr)
    raise
finally:
    driver.quit()
